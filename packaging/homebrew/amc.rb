# The Homebrew cask for AMC.app. scripts/macos/cask fills in the version, the repository
# and each .dmg's SHA-256 (the release workflow attaches the result to each release);
# scripts/macos/check-cask.rb checks it as `brew style` and `brew audit` would.
cask "amc" do
  arch arm: "aarch64", intel: "x86_64"

  version "@VERSION@"
  sha256 arm:   "@SHA256_ARM@",
         intel: "@SHA256_INTEL@"

  url "https://github.com/@REPOSITORY@/releases/download/v#{version}/AMC-v#{version}-#{arch}.dmg"
  name "AMC"
  desc "Lets local AI agents answer approved iMessage and Discord chats"
  homepage "https://github.com/@REPOSITORY@"

  depends_on macos: ">= :ventura"

  app "AMC.app"
  binary "#{appdir}/AMC.app/Contents/MacOS/amc"

  uninstall quit:      "app.amc.tray",
            launchctl: "AMC"

  zap trash: [
    "~/Library/Application Support/AMC",
    "~/Library/Caches/app.amc.tray",
    "~/Library/LaunchAgents/AMC.plist",
    "~/Library/Preferences/app.amc.tray.plist",
    "~/Library/WebKit/app.amc.tray",
  ]
end
