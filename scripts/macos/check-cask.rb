# Checks a filled-in Homebrew cask (scripts/macos/cask's output) without Homebrew, which
# does not run here: it is evaluated against a stand-in of the cask DSL that records each
# stanza (once per architecture), and then held to an approximation of the rules
# `brew style` and `brew audit` apply to casks: the stanzas in Homebrew's order,
# one SHA-256 per architecture, an https URL naming the version and the architecture, a
# `desc` that does not start with an article or the app's name, has no final period and
# is at most 80 characters.
#
#   ruby scripts/macos/check-cask.rb amc.rb

# The stanza order of Homebrew's cask style (rubocop-cask's StanzaOrder), as far as AMC's
# cask uses it.
ORDER = %i[arch version sha256 url name desc homepage livecheck depends_on app binary uninstall zap].freeze

# A stand-in for Homebrew's cask DSL: records what the cask says.
class Recorder
  attr_reader :stanzas, :values

  # `on`: the architecture the cask is read for (:arm or :intel).
  def initialize(on)
    @on = on
    @stanzas = []
    @values = {}
  end

  def record(stanza, value)
    @stanzas << stanza
    @values[stanza] = value
  end

  def arch(arm: nil, intel: nil)
    return @values.dig(:arch, @on) if arm.nil? && intel.nil?

    record(:arch, { arm: arm, intel: intel })
  end

  def version(value = nil)
    return @values[:version] if value.nil?

    record(:version, value)
  end

  def appdir
    "/Applications"
  end

  %i[sha256 url name desc homepage livecheck depends_on app binary uninstall zap].each do |stanza|
    define_method(stanza) { |*args, **kwargs| record(stanza, kwargs.empty? ? args : [*args, kwargs]) }
  end
end

def cask(token, &block)
  raise "the cask's token is #{token}, not amc" unless token == "amc"

  $recorded = %i[arm intel].to_h do |on|
    recorder = Recorder.new(on)
    recorder.instance_eval(&block)
    [on, recorder]
  end
end

def fail!(why)
  warn "check-cask: #{why}"
  exit 1
end

path = ARGV.fetch(0) { fail!("usage: ruby scripts/macos/check-cask.rb CASK.rb") }
text = File.read(path)
fail!("placeholders left: #{text.scan(/@[A-Z0-9_]+@/).uniq.join(", ")}") if text =~ /@[A-Z0-9_]+@/
load File.expand_path(path)
fail!("no cask in #{path}") unless $recorded
r = $recorded[:arm]
$recorded.each do |on, read|
  url = read.values[:url].first
  fail!("the #{on} URL does not name its architecture: #{url}") unless url.include?(read.values.dig(:arch, on))
end
fail!("both architectures download the same file") if $recorded.values.map { |read| read.values[:url] }.uniq.size != 2

fail!("stanzas out of Homebrew's order: #{r.stanzas.join(", ")}") unless r.stanzas == r.stanzas.sort_by { |s| ORDER.index(s) || ORDER.size }
missing = %i[arch version sha256 url name desc homepage depends_on app] - r.stanzas
fail!("missing stanzas: #{missing.join(", ")}") unless missing.empty?
fail!("a stanza twice: #{r.stanzas.join(", ")}") unless r.stanzas.uniq.size == r.stanzas.size

version = r.values[:version]
fail!("not a version: #{version}") unless version.is_a?(String) && version.match?(/\A\d+\.\d+\.\d+/)
sums = r.values[:sha256].last
fail!("sha256 must name arm: and intel:") unless sums.is_a?(Hash) && sums.keys.sort == %i[arm intel]
sums.each { |arch, sum| fail!("#{arch}: not a SHA-256: #{sum}") unless sum.match?(/\A[0-9a-f]{64}\z/) }
fail!("the two architectures have the same file") if sums[:arm] == sums[:intel]

url = r.values[:url].first
fail!("the URL is not https: #{url}") unless url.start_with?("https://")
fail!("the URL does not name the version: #{url}") unless url.include?(version)
fail!("the homepage is not https") unless r.values[:homepage].first.start_with?("https://")

desc = r.values[:desc].first
fail!("desc starts with an article: #{desc}") if desc.match?(/\A(a|an|the)\s/i)
fail!("desc starts with the app's name: #{desc}") if desc.downcase.start_with?(r.values[:name].first.downcase)
fail!("desc ends with a period: #{desc}") if desc.end_with?(".")
fail!("desc is over 80 characters: #{desc}") if desc.length > 80
fail!("the app is not AMC.app") unless r.values[:app] == ["AMC.app"]

puts "check-cask: #{path} is a well-formed cask for AMC #{version}"
