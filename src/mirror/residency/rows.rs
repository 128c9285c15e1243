//! A provider's held versions as the pages show them ([`Rows`]), kept by
//! the index between changes in a compact form: the version text in one
//! string and the platforms as their numbers, made into a page's rows
//! ([`HeldVersion`]) after the index's lock is released.

use std::sync::Arc;

use crate::address::{Platform, Version};

/// A held version as the pages show it, with its platforms (sorted).
pub type HeldVersion = (Version, Vec<String>);

/// Ends one version's platforms in [`Rows::platforms`] (platforms are
/// numbered below 65,535: `Table::platform_id_or_new` stops before).
const END: u16 = u16::MAX;

/// A provider's held versions, newest first, with their platforms: about
/// 300 bytes for ten versions of five platforms.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Rows {
    /// The provider, as written.
    name: Box<str>,
    /// The versions as written, newest first, one per line.
    versions: Box<str>,
    /// Each version's platform numbers, in the order of the platforms'
    /// text, each version's ended by [`END`].
    platforms: Box<[u16]>,
}

impl Rows {
    /// The rows of `versions` (each as written, with its platform
    /// numbers) for the provider `name`, with `platform` giving a
    /// number's text. A version that does not parse is left out, as the
    /// pages always left it.
    pub fn new<'a>(
        name: String,
        versions: impl Iterator<Item = (&'a str, Vec<u16>)>,
        platform: impl Fn(u16) -> &'a Platform,
    ) -> Rows {
        let mut held: Vec<(Version, &str, Vec<u16>)> = versions
            .filter_map(|(v, numbers)| Some((Version::parse(v).ok()?, v, numbers)))
            .collect();
        held.sort_by(|a, b| b.0.cmp(&a.0));
        let mut text = String::new();
        let mut platforms = Vec::new();
        for (_, written, mut numbers) in held {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(written);
            numbers.sort_by(|a, b| platform(*a).as_str().cmp(platform(*b).as_str()));
            platforms.extend(numbers);
            platforms.push(END);
        }
        Rows {
            name: name.into(),
            versions: text.into(),
            platforms: platforms.into(),
        }
    }

    /// The provider, as written.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The versions as the pages show them, with `platforms` the table's
    /// platforms by number (numbers never change, so a later list holds
    /// every number an earlier one did).
    pub fn shown(&self, platforms: &[Platform]) -> Vec<HeldVersion> {
        let groups = self.platforms.split(|n| *n == END);
        (self.versions.split('\n').filter(|v| !v.is_empty()))
            .zip(groups)
            .filter_map(|(v, numbers)| {
                let shown = (numbers.iter())
                    .filter_map(|n| platforms.get(usize::from(*n)))
                    .map(|p| p.as_str().to_owned())
                    .collect();
                Some((Version::parse(v).ok()?, shown))
            })
            .collect()
    }
}

/// What a page took under the index's lock: each shown provider's kept
/// rows and the platforms' text, shared, to be made into the page's rows
/// after the lock.
#[derive(Debug, Default)]
pub(super) struct Taken {
    /// The providers' rows, in the page's order.
    pub rows: Vec<Arc<Rows>>,
    /// The table's platforms, by number.
    pub platforms: Arc<Vec<Platform>>,
}

impl Taken {
    /// The page's rows: each provider with its versions, as shown.
    pub fn shown(&self) -> Vec<(String, Vec<HeldVersion>)> {
        (self.rows.iter())
            .map(|rows| (rows.name().to_owned(), rows.shown(&self.platforms)))
            .collect()
    }
}
