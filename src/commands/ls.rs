//! `tfmirror ls`: the cached archives as a table or as JSON.

use std::fmt::Write as _;
use std::time::Duration;

use crate::config::Config;
use crate::store::inventory;

/// `tfmirror ls`.
pub fn command(config: &Config, json: bool) -> anyhow::Result<()> {
    let store = super::open_store(config)?;
    let archives = inventory::archives(&store);
    if json {
        println!("{}", serde_json::to_string_pretty(&archives)?);
        return Ok(());
    }
    let rows: Vec<[String; 5]> = archives
        .iter()
        .map(|a| {
            [
                a.provider.to_string(),
                a.version.to_string(),
                a.platform.to_string(),
                bytesize::ByteSize(a.size).display().iec().to_string(),
                humantime::format_rfc3339_seconds(
                    std::time::UNIX_EPOCH + Duration::from_secs(a.last_used),
                )
                .to_string(),
            ]
        })
        .collect();
    let header = ["PROVIDER", "VERSION", "PLATFORM", "SIZE", "LAST USED"];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i == 3 {
                let _ = write!(s, "{cell:>w$}  ");
            } else {
                let _ = write!(s, "{cell:<w$}  ");
            }
        }
        s.trim_end().to_owned()
    };
    println!("{}", line(header));
    for row in &rows {
        println!("{}", line(row.each_ref().map(String::as_str)));
    }
    let total: u64 = archives.iter().map(|a| a.size).sum();
    println!(
        "{} archives, {}",
        archives.len(),
        bytesize::ByteSize(total).display().iec()
    );
    Ok(())
}
