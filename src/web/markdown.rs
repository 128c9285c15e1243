//! Module READMEs and provider documentation, which anyone who publishes
//! a module or a provider writes, made safe to show: Markdown turned into HTML (pulldown-cmark), images turned into
//! links to them (so that nothing is loaded from elsewhere), and the
//! result through one sanitiser (ammonia) that keeps text, structure and
//! plain links: no script, no event handler, no style, no form, frame or
//! SVG, no link but to `http`, `https` and `mailto` addresses, and every
//! link marked `nofollow noopener noreferrer`. This is the one place
//! untrusted markup becomes HTML. Provider documentation goes through the
//! same sanitiser with one more step ([`render_doc`]): each link is led
//! where [`DocLinks`] says, so that links between documents stay on the
//! mirror.

use std::borrow::Cow;
use std::sync::Arc;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::doc_links::DocLinks;

/// The HTML of a README written in Markdown.
pub fn render(markdown: &str) -> String {
    sanitize(&to_html(markdown))
}

/// The HTML of a provider documentation page written in Markdown: as
/// [`render`], with each link's address (any `href`), in the Markdown and
/// in any HTML it holds, replaced by where `links` says it leads on this
/// mirror, or dropped (its text kept) where it leads nowhere the mirror
/// can name. The only addresses without a scheme let through are paths
/// to the mirror's own provider pages.
pub fn render_doc(markdown: &str, links: DocLinks) -> String {
    let links = Arc::new(links);
    let mut builder = builder();
    builder.attribute_filter(move |_, attribute, value| {
        if attribute == "href" {
            links.resolve(value).map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(value))
        }
    });
    builder.url_relative(ammonia::UrlRelative::Custom(Box::new(only_mirror_pages)));
    builder.clean(&to_html(markdown)).to_string()
}

/// `url` where it is a path to one of the mirror's provider pages, with
/// no step out of it; `None` (dropped) for any other address without a
/// scheme.
fn only_mirror_pages(url: &str) -> Option<Cow<'_, str>> {
    let page = url.starts_with("/-/providers/")
        && !url.contains("//")
        && !url.contains('\\')
        && !url.split(['/', '?', '#']).any(|s| s == "." || s == "..");
    page.then_some(Cow::Borrowed(url))
}

/// Markdown as HTML, images turned into links to them; not yet safe.
fn to_html(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let events = Parser::new_ext(markdown, options).map(|event| match event {
        // An image becomes a link to it: its text is its alt text. (The
        // parser closes every tag it opens, an image's too.)
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }),
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut html = String::with_capacity(markdown.len() + markdown.len() / 4);
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// A documentation page's Markdown without its YAML front matter: the
/// block between a first line `---` and the next line `---` (the
/// registries' pages carry `page_title`, `subcategory` and `description`
/// there, which the list of pages shows). Text with no such block, or one
/// never closed, is returned whole.
pub fn without_front_matter(markdown: &str) -> &str {
    let Some(rest) = (markdown.strip_prefix("---\n")).or_else(|| markdown.strip_prefix("---\r\n"))
    else {
        return markdown;
    };
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        at += line.len();
        if line.trim_end() == "---" {
            return &rest[at..];
        }
    }
    markdown
}

/// HTML from anyone, made safe to show (see the module documentation).
pub fn sanitize(html: &str) -> String {
    builder().clean(html).to_string()
}

/// The one sanitiser's settings (see the module documentation).
fn builder() -> ammonia::Builder<'static> {
    let mut builder = ammonia::Builder::default();
    builder
        .rm_tags(["img"])
        .url_schemes(["http", "https", "mailto"].into())
        .url_relative(ammonia::UrlRelative::Deny)
        .link_rel(Some("nofollow noopener noreferrer"));
    builder
}

#[cfg(test)]
mod tests;
