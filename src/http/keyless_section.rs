//! The status page's section on keyless provider versions: how many the
//! mirror holds pins for, which, and the answers refused since start for
//! differing from their pins.

use std::fmt::Write as _;

use super::html::escape;

/// How many keyless versions the section lists.
const SHOWN: usize = 200;
use super::App;

/// Writes the section; `hidden` when access control is on and the request
/// carries no token.
pub(super) fn keyless_section(html: &mut String, app: &App, hidden: bool) {
    html.push_str("<h2>Keyless providers</h2>\n");
    if hidden {
        html.push_str(
            "<p id=\"keyless\">Keyless provider versions are shown to requests with a token.</p>\n",
        );
        return;
    }
    let pins = app.mirror.keyless_versions();
    let incidents = app.mirror.pin_incidents();
    let _ = writeln!(
        html,
        "<p id=\"keyless\">{} keyless provider versions held (published without a signing key: checksums, sizes and hashes checked, signature file required, pinned on first sight). {} answers refused since start for differing from their pins.</p>",
        pins.len(),
        incidents.len()
    );
    if !incidents.is_empty() {
        html.push_str("<table id=\"pin-mismatches\"><thead><tr><th>When</th><th>What differed</th></tr></thead><tbody>\n");
        for incident in incidents.iter().rev() {
            let at = humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(incident.at_ms),
            );
            let _ = writeln!(
                html,
                "<tr><td>{at}</td><td>{}</td></tr>",
                escape(&incident.what)
            );
        }
        html.push_str("</tbody></table>\n");
    }
    if pins.is_empty() {
        return;
    }
    html.push_str("<table id=\"keyless-versions\"><thead><tr><th>Provider</th><th>Version</th><th>Platforms pinned</th><th>Pinned</th></tr></thead><tbody>\n");
    for pin in pins.iter().take(SHOWN) {
        let at = humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(pin.pinned_at_ms),
        );
        let repinned = match (pin.replaced.len(), &pin.repin) {
            (_, Some(_)) => " (re-pin approved, pending)".to_owned(),
            (0, None) => String::new(),
            (n, None) => format!(" (re-pinned {n}×)"),
        };
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{at}{repinned}</td></tr>",
            escape(&pin.provider.to_string()),
            escape(pin.version.as_str()),
            pin.packages.len()
        );
    }
    html.push_str("</tbody></table>\n");
}
