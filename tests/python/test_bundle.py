"""What can be checked of AMC.app off a Mac: the Info.plist keys and entitlements macOS needs
before it lets AMC drive Messages, and that tauri.conf.json hands them to the bundler."""
from __future__ import annotations

import json
import plistlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TAURI = ROOT / "src-tauri"


def test_info_plist_asks_for_automation_and_hides_the_dock_icon():
    info = plistlib.loads((TAURI / "Info.plist").read_bytes())
    # Without it macOS refuses osascript's Apple Events (-1743) and never shows a prompt.
    assert "Messages" in info["NSAppleEventsUsageDescription"]
    assert info["LSUIElement"] is True


def test_entitlements_allow_apple_events_under_the_hardened_runtime():
    entitlements = plistlib.loads((TAURI / "Entitlements.plist").read_bytes())
    assert entitlements == {"com.apple.security.automation.apple-events": True}


def test_tauri_conf_hands_both_files_to_the_bundler():
    conf = json.loads((TAURI / "tauri.conf.json").read_text())
    mac = conf["bundle"]["macOS"]
    for key in ("infoPlist", "entitlements"):
        assert (TAURI / mac[key]).is_file(), key
    # `1st account whose service type = …` in the send script needs macOS 13.
    assert tuple(int(p) for p in mac["minimumSystemVersion"].split(".")) >= (13, 0)


def test_the_bundle_build_adds_amc_as_a_sidecar():
    # scripts/bundle builds `amc` into src-tauri/binaries/amc-<target triple> and passes this
    # overlay to `tauri build`; the plain cargo build of the app does not need it.
    overlay = json.loads((TAURI / "tauri.bundle.json").read_text())
    assert overlay == {"bundle": {"externalBin": ["binaries/amc"]}}
    assert "externalBin" not in json.loads((TAURI / "tauri.conf.json").read_text())["bundle"]
    script = (ROOT / "scripts" / "bundle").read_text()
    assert 'src-tauri/binaries/amc-$triple' in script and "--config tauri.bundle.json" in script
