//! Module READMEs and provider documentation, which anyone who publishes
//! a module or a provider writes, made safe to show: Markdown turned into HTML (pulldown-cmark), images turned into
//! links to them (so that nothing is loaded from elsewhere), and the
//! result through one sanitiser (ammonia) that keeps text, structure and
//! plain links: no script, no event handler, no style, no form, frame or
//! SVG, no link but to `http`, `https` and `mailto` addresses, and every
//! link marked `nofollow noopener noreferrer`. This is the one place
//! untrusted markup becomes HTML.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// The HTML of a README written in Markdown.
pub fn render(markdown: &str) -> String {
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
    sanitize(&html)
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
    ammonia::Builder::default()
        .rm_tags(["img"])
        .url_schemes(["http", "https", "mailto"].into())
        .url_relative(ammonia::UrlRelative::Deny)
        .link_rel(Some("nofollow noopener noreferrer"))
        .clean(html)
        .to_string()
}

#[cfg(test)]
mod tests;
