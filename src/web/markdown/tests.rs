//! The hostile README corpus (`tests/fixtures/hostile-readmes/`) through
//! [`render`]: nothing that runs, loads or sends is left.

use super::*;

fn corpus() -> Vec<(String, String)> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile-readmes");
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "md"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert!(out.len() >= 7, "the corpus is there");
    out
}

/// What must never be left in a README's HTML, in lower case
/// (`tests/fixtures/hostile-readmes/forbidden.txt`, which the test of the
/// served page reads too).
fn forbidden() -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hostile-readmes/forbidden.txt");
    let list: Vec<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    assert!(list.len() > 20, "the list is there");
    list
}

#[test]
fn nothing_that_runs_loads_or_sends_is_left() {
    let handler = regex::Regex::new(r"<[^>]*\son[a-z]+\s*=").unwrap();
    for (name, markdown) in corpus() {
        let html = render(&markdown).to_lowercase();
        for never in forbidden() {
            assert!(!html.contains(&never), "{name}: {never} left in\n{html}");
        }
        // No event handler attribute of any name.
        assert!(!handler.is_match(&html), "{name}: an event handler\n{html}");
        // No relative link (it would point into the mirror).
        assert!(!html.contains("href=\"../"), "{name}: a relative link");
        assert!(!html.contains("href=\"relative-link"), "{name}");
    }
}

#[test]
fn images_become_links_and_plain_links_stay_without_a_referrer() {
    let html =
        render("![tracker](https://evil.example/pixel.png) and [docs](https://example.com/d)");
    assert!(
        html.contains(r#"<a href="https://evil.example/pixel.png" rel="nofollow noopener noreferrer">tracker</a>"#),
        "{html}"
    );
    assert!(html.contains(
        r#"<a href="https://example.com/d" rel="nofollow noopener noreferrer">docs</a>"#
    ));
    let table = render("| a | b |\n|---|---|\n| 1 | 2 |\n\n```hcl\nmodule \"x\" {}\n```\n");
    assert!(
        table.contains("<table>") && table.contains("<code"),
        "{table}"
    );
}

#[test]
fn a_five_mib_readme_renders_whole_and_safe() {
    let line = "Some **bold** text with a [link](https://example.com) and <script>x</script>\n\n";
    let big = line.repeat((5 << 20) / line.len());
    let html = render(&big);
    assert!(html.len() > 4 << 20, "{}", html.len());
    assert!(!html.to_lowercase().contains("<script"));
}

#[test]
fn tables_strikethrough_task_lists_and_footnotes_render() {
    let cases = [
        (
            "| a | b |\n|---|---|\n| 1 | 2 |\n",
            "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody>",
        ),
        ("~~gone~~ and **kept**", "<p><del>gone</del> and <strong>kept</strong></p>"),
        // A task's marker is not left as text (its checkbox, an input, is
        // taken out by the sanitiser).
        ("- [x] done\n- [ ] open\n", "<ul>\n<li>\ndone</li>\n<li>\nopen</li>\n</ul>"),
        // A footnote's reference and its text, its link (to a fragment of
        // the page) taken out.
        (
            "Text[^1].\n\n[^1]: The note.\n",
            "<p>Text<sup><a rel=\"nofollow noopener noreferrer\">1</a></sup>.</p>\n<div><sup>1</sup>\n<p>The note.</p>",
        ),
    ];
    for (markdown, html) in cases {
        let rendered = render(markdown);
        assert!(rendered.contains(html), "{markdown:?}: {rendered}");
    }
}

#[test]
fn a_documentation_page_s_front_matter_is_left_out_and_nothing_else() {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/docs/null-v3.2.4/docs/resources/resource.md"),
    )
    .unwrap();
    let body = without_front_matter(&page);
    assert!(body.starts_with("\n# null_resource\n"), "{body:.80}");
    assert!(page.ends_with(body) && !body.contains("page_title"));
    let html = render(body);
    assert!(html.contains("<h1>null_resource</h1>"), "{html:.200}");
    assert!(!html.contains("<hr"), "no rule is left of the block");
    // Over CRLF lines too; a page with none, or a block never closed, is
    // whole; a rule further down is the page's own.
    assert_eq!(
        without_front_matter("---\r\npage_title: x\r\n---\r\n# A\r\n"),
        "# A\r\n"
    );
    for whole in [
        "# A\n\n---\n\nB\n",
        "---\npage_title: never closed\n# A\n",
        "--- \nx\n---\n",
        "",
    ] {
        assert_eq!(without_front_matter(whole), whole);
    }
    assert_eq!(without_front_matter("---\n---\n"), "");
}

#[test]
fn the_only_addresses_without_a_scheme_let_through_are_the_mirror_s_provider_pages() {
    for (url, kept) in [
        (
            "/-/providers/registry.terraform.io/hashicorp/null/3.2.4/docs",
            true,
        ),
        ("/-/providers/h/n/t/1.0.0/docs/data-source/file", true),
        ("/-/status", false),
        ("/-/providers/x/../../-/status", false),
        ("/-/providers/x/./y", false),
        ("/-/providers//evil.example/x", false),
        ("/-/providers/x\\..\\y", false),
        ("../d/file.html", false),
        ("//evil.example/-/providers/x", false),
    ] {
        assert_eq!(only_mirror_pages(url).is_some(), kept, "{url}");
    }
}
