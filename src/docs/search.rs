//! The documentation search index: every page of every version whose
//! documentation the mirror keeps, found by its name (`s3_bucket`, or
//! with the provider's type before it, `aws_s3_bucket`), by words of its
//! title, and by words of its text. Built with tantivy in a directory of
//! the instance's own; derived state, never the only copy of anything:
//! each daemon makes it anew from the store when it starts
//! ([`DocIndex::create`] empties the directory) and adds each version it
//! keeps afterwards.
//!
//! Each page's content is indexed once, however many versions list it:
//! a document per page content (its provider, kind, name and SHA-256),
//! and a small document per version naming the contents it lists. Most
//! pages are the same from one version to the next, so the index grows
//! with the distinct pages the store keeps, not with the versions held;
//! a search finds contents and then reads which versions list each.
//!
//! A query is plain text, never syntax: cut at the last whole word within
//! [`MAX_QUERY`] bytes, it finds the page whose name it is (ranked first)
//! and the pages that hold every one of its words.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, FAST, STORED, STRING,
    TEXT,
};
use tantivy::tokenizer::{LowerCaser, RawTokenizer, TextAnalyzer};
use tantivy::{
    DocSet, Index, IndexReader, IndexWriter, Searcher, TantivyDocument, Term, TERMINATED,
};

use super::DocKind;
use crate::address::{Provider, Version};
use crate::store::docs::{PageEntry, VersionDocs};

/// The longest query read, in bytes; the rest is left out.
pub const MAX_QUERY: usize = 256;

/// The memory the index's writer may fill before it writes a segment
/// (tantivy's least for one thread).
const WRITER_MEMORY: usize = 15_000_000;

/// How much more a whole name counts than words of the text.
const NAME_BOOST: f32 = 20.0;

/// How much more a word of the title counts than one of the text.
const TITLE_BOOST: f32 = 3.0;

/// The tokenizer of page names: the whole name, in lower case.
const NAME_TOKENIZER: &str = "page_name";

/// The fast field that holds a version document's version.
const VERSION_FIELD: &str = "version";

/// Why the index could not be made, written or read.
#[derive(Debug, thiserror::Error)]
#[error("the documentation search index in {dir}: {source}")]
pub struct IndexError {
    dir: String,
    #[source]
    source: tantivy::TantivyError,
}

/// One page content found, with the versions whose lists name it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DocHit {
    /// The provider's address.
    pub provider: String,
    /// What the page describes.
    pub kind: DocKind,
    /// Its name.
    pub name: String,
    /// Its title, as the first version indexed with this content gave it.
    pub title: String,
    /// The versions indexed whose lists name this content, in no order.
    pub versions: Vec<String>,
}

/// The fields of the index.
struct Fields {
    /// A page content's key ([`page_key`]): on the page's document, what
    /// it is found by; on a version's, one value per page it lists.
    page: Field,
    /// The versions that list the page contents of [`Fields::page`]'s values.
    lists: Field,
    /// `provider@version`, on a version's document: what it is replaced
    /// by.
    key: Field,
    /// The version, on a version's document (fast: read per hit).
    version: Field,
    provider: Field,
    kind: Field,
    /// The page's name as written, shown.
    name: Field,
    /// Its name and, where the provider's type is not already its start,
    /// `TYPE_NAME`, each whole and in lower case: what a name is found by.
    names: Field,
    title: Field,
    text: Field,
}

/// The writer, and the page contents added since the last commit (which
/// searches do not see yet).
struct Writing {
    writer: IndexWriter,
    pending: HashSet<String>,
}

/// The index, its writer and its reader.
pub struct DocIndex {
    dir: String,
    index: Index,
    fields: Fields,
    writing: Mutex<Writing>,
    reader: IndexReader,
}

/// What a page content is known by in the index: the provider, the
/// page's kind and name, and the content's SHA-256 (none of which holds
/// a tab).
fn page_key(provider: &str, page: &PageEntry) -> String {
    format!(
        "{provider}\t{}\t{}\t{}",
        page.kind.as_str(),
        page.name,
        page.sha256
    )
}

impl DocIndex {
    /// An empty index in `dir`, whatever was there before.
    pub fn create(dir: &Path) -> Result<DocIndex, IndexError> {
        let fail = |source| IndexError {
            dir: dir.display().to_string(),
            source,
        };
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|e| fail(e.into()))?;
        }
        std::fs::create_dir_all(dir).map_err(|e| fail(e.into()))?;
        let mut schema = Schema::builder();
        let name_options = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(NAME_TOKENIZER)
                .set_index_option(IndexRecordOption::Basic),
        );
        let fields = Fields {
            page: schema.add_text_field("page", STRING | STORED),
            lists: schema.add_text_field("lists", STRING),
            key: schema.add_text_field("key", STRING),
            version: schema.add_text_field(VERSION_FIELD, STRING | FAST),
            provider: schema.add_text_field("provider", STORED),
            kind: schema.add_text_field("kind", STORED),
            name: schema.add_text_field("name", STORED),
            names: schema.add_text_field("names", name_options),
            title: schema.add_text_field("title", TEXT | STORED),
            text: schema.add_text_field("text", TEXT),
        };
        let index = Index::create_in_dir(dir, schema.build()).map_err(fail)?;
        index.tokenizers().register(
            NAME_TOKENIZER,
            TextAnalyzer::builder(RawTokenizer::default())
                .filter(LowerCaser)
                .build(),
        );
        let writer = index
            .writer_with_num_threads(1, WRITER_MEMORY)
            .map_err(fail)?;
        let reader = index.reader().map_err(fail)?;
        Ok(DocIndex {
            dir: dir.display().to_string(),
            index,
            fields,
            writing: Mutex::new(Writing {
                writer,
                pending: HashSet::new(),
            }),
            reader,
        })
    }

    fn fail(&self, source: tantivy::TantivyError) -> IndexError {
        IndexError {
            dir: self.dir.clone(),
            source,
        }
    }

    fn writing(&self) -> MutexGuard<'_, Writing> {
        self.writing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the page content `key` is in the index, committed or added
    /// since.
    fn has_page(
        &self,
        searcher: &Searcher,
        writing: &Writing,
        key: &str,
    ) -> Result<bool, IndexError> {
        if writing.pending.contains(key) {
            return Ok(true);
        }
        let term = Term::from_field_text(self.fields.page, key);
        Ok(searcher.doc_freq(&term).map_err(|e| self.fail(e))? > 0)
    }

    /// The pages of `docs` whose content the index has not got: those
    /// [`DocIndex::add_version`] needs the content of.
    pub fn lacking<'a>(&self, docs: &'a VersionDocs) -> Result<Vec<&'a PageEntry>, IndexError> {
        let provider = docs.provider.to_string();
        let searcher = self.reader.searcher();
        let writing = self.writing();
        let mut lacking = Vec::new();
        for page in &docs.pages {
            if !self.has_page(&searcher, &writing, &page_key(&provider, page))? {
                lacking.push(page);
            }
        }
        Ok(lacking)
    }

    /// Puts `docs` in the index in place of what the version had there:
    /// each of its pages whose content is in the index already or among
    /// `contents` (pages with their content; those the index has are
    /// passed over). Seen by searches once [`DocIndex::commit`] is called.
    /// How many page contents were new.
    pub fn add_version<'a, C: AsRef<str>>(
        &self,
        docs: &VersionDocs,
        contents: impl IntoIterator<Item = (&'a PageEntry, C)>,
    ) -> Result<usize, IndexError> {
        let f = &self.fields;
        let provider = docs.provider.to_string();
        let key = format!("{provider}@{}", docs.version);
        let prefix = format!("{}_", docs.provider.kind);
        let searcher = self.reader.searcher();
        let mut writing = self.writing();
        let mut added = 0;
        for (page, content) in contents {
            let page_key = page_key(&provider, page);
            if self.has_page(&searcher, &writing, &page_key)? {
                continue;
            }
            let mut doc = TantivyDocument::default();
            doc.add_text(f.page, &page_key);
            doc.add_text(f.provider, &provider);
            doc.add_text(f.kind, page.kind.as_str());
            doc.add_text(f.name, page.name.as_str());
            doc.add_text(f.names, page.name.as_str());
            if !page.name.as_str().starts_with(&prefix) {
                doc.add_text(f.names, format!("{prefix}{}", page.name));
            }
            doc.add_text(f.title, &page.title);
            doc.add_text(f.text, content.as_ref());
            writing.writer.add_document(doc).map_err(|e| self.fail(e))?;
            writing.pending.insert(page_key);
            added += 1;
        }
        let mut listed = TantivyDocument::default();
        listed.add_text(f.key, &key);
        listed.add_text(f.version, &docs.version);
        for page in &docs.pages {
            let page_key = page_key(&provider, page);
            if self.has_page(&searcher, &writing, &page_key)? {
                listed.add_text(f.lists, &page_key);
            }
        }
        writing
            .writer
            .delete_term(Term::from_field_text(f.key, &key));
        writing
            .writer
            .add_document(listed)
            .map_err(|e| self.fail(e))?;
        Ok(added)
    }

    /// Whether the index holds pages of `provider` `version`, as last
    /// committed.
    pub fn holds(&self, provider: &Provider, version: &Version) -> Result<bool, IndexError> {
        let key = Term::from_field_text(self.fields.key, &format!("{provider}@{version}"));
        let found = self.reader.searcher().doc_freq(&key);
        Ok(found.map_err(|e| self.fail(e))? > 0)
    }

    /// Makes what was added since the last commit seen by searches.
    pub fn commit(&self) -> Result<(), IndexError> {
        let mut writing = self.writing();
        writing.writer.commit().map_err(|e| self.fail(e))?;
        self.reader.reload().map_err(|e| self.fail(e))?;
        writing.pending.clear();
        Ok(())
    }

    /// The page contents `query` finds, best first, at most `limit`, each
    /// with the versions that list it: every word in the page's name,
    /// title or text, a whole name first, then a title.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<DocHit>, IndexError> {
        let query = cut(query);
        if query.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let f = &self.fields;
        let parsed = self.query_of(query).map_err(|e| self.fail(e))?;
        let searcher = self.reader.searcher();
        let top = searcher
            .search(&parsed, &TopDocs::with_limit(limit).order_by_score())
            .map_err(|e| self.fail(e))?;
        let mut hits = Vec::with_capacity(top.len());
        for (_score, address) in top {
            let doc: TantivyDocument = searcher.doc(address).map_err(|e| self.fail(e))?;
            let text = |field| {
                (doc.get_first(field))
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            let Some(kind) = DocKind::from_segment(&text(f.kind)) else {
                continue;
            };
            hits.push(DocHit {
                versions: self.listing(&searcher, &text(f.page))?,
                provider: text(f.provider),
                kind,
                name: text(f.name),
                title: text(f.title),
            });
        }
        Ok(hits)
    }

    /// The versions whose documents list the page content `key`.
    fn listing(&self, searcher: &Searcher, key: &str) -> Result<Vec<String>, IndexError> {
        let term = Term::from_field_text(self.fields.lists, key);
        let mut versions = Vec::new();
        for segment in searcher.segment_readers() {
            let read = |e: std::io::Error| self.fail(e.into());
            let inverted = segment.inverted_index(self.fields.lists);
            let inverted = inverted.map_err(|e| self.fail(e))?;
            let Some(mut postings) = inverted
                .read_postings(&term, IndexRecordOption::Basic)
                .map_err(read)?
            else {
                continue;
            };
            let column = segment.fast_fields().str(VERSION_FIELD);
            let Some(column) = column.map_err(|e| self.fail(e))? else {
                continue;
            };
            let alive = segment.alive_bitset();
            let mut doc = postings.doc();
            while doc != TERMINATED {
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    for ord in column.term_ords(doc) {
                        let mut version = String::new();
                        if column.ord_to_str(ord, &mut version).map_err(read)? {
                            versions.push(version);
                        }
                    }
                }
                doc = postings.advance();
            }
        }
        Ok(versions)
    }
}

impl DocIndex {
    /// What `query` asks: the whole of it as a page's name (in any case),
    /// or every word of it in the page's title or text. Its words are split
    /// as the text is when indexed (at anything not a letter or digit), so
    /// `terraform_data` asks for pages that hold both `terraform` and
    /// `data`, not for the two side by side; nothing in it is syntax.
    fn query_of(&self, query: &str) -> Result<Box<dyn Query>, tantivy::TantivyError> {
        let f = &self.fields;
        let term = |field, word: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(
                Term::from_field_text(field, word),
                IndexRecordOption::WithFreqs,
            ))
        };
        let boosted =
            |q: Box<dyn Query>, by: f32| -> Box<dyn Query> { Box::new(BoostQuery::new(q, by)) };
        let mut words: Vec<String> = Vec::new();
        let mut analyzer = self.index.tokenizer_for_field(f.text)?;
        let mut stream = analyzer.token_stream(query);
        while let Some(token) = stream.next() {
            if !words.contains(&token.text) {
                words.push(token.text.clone());
            }
        }
        let every_word: Vec<(Occur, Box<dyn Query>)> = (words.iter())
            .map(|w| {
                let either = BooleanQuery::new(vec![
                    (Occur::Should, boosted(term(f.title, w), TITLE_BOOST)),
                    (Occur::Should, term(f.text, w)),
                ]);
                (Occur::Must, Box::new(either) as Box<dyn Query>)
            })
            .collect();
        let name = term(f.names, &query.to_lowercase());
        let mut either = vec![(Occur::Should, boosted(name, NAME_BOOST))];
        if !every_word.is_empty() {
            either.push((Occur::Should, Box::new(BooleanQuery::new(every_word))));
        }
        Ok(Box::new(BooleanQuery::new(either)))
    }
}

/// `query` cut to at most [`MAX_QUERY`] bytes, at the end of a word
/// where it is cut, and trimmed.
fn cut(query: &str) -> &str {
    if query.len() <= MAX_QUERY {
        return query.trim();
    }
    let mut end = MAX_QUERY;
    while !query.is_char_boundary(end) {
        end -= 1;
    }
    let head = &query[..end];
    let whole = if query[end..].starts_with(char::is_whitespace) {
        head
    } else {
        head.rsplit_once(char::is_whitespace)
            .map_or(head, |(w, _)| w)
    };
    whole.trim()
}

#[cfg(test)]
mod tests;
