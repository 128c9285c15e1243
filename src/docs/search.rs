//! The documentation search index: every page of every version whose
//! documentation the mirror keeps, found by its name (`s3_bucket`, or
//! with the provider's type before it, `aws_s3_bucket`), by words of its
//! title, and by words of its text. Built with tantivy in a directory of
//! the instance's own; derived state, never the only copy of anything:
//! each daemon makes it anew from the store when it starts
//! ([`DocIndex::create`] empties the directory) and adds each version it
//! keeps afterwards.
//!
//! A query is plain text, never syntax: cut at the last whole word within
//! [`MAX_QUERY`] bytes, it finds the page whose name it is (ranked first)
//! and the pages that hold every one of its words.

use std::path::Path;
use std::sync::{Mutex, PoisonError};

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, STORED, STRING, TEXT,
};
use tantivy::tokenizer::{LowerCaser, RawTokenizer, TextAnalyzer};
use tantivy::{Index, IndexReader, IndexWriter, TantivyDocument, Term};

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

/// Why the index could not be made, written or read.
#[derive(Debug, thiserror::Error)]
#[error("the documentation search index in {dir}: {source}")]
pub struct IndexError {
    dir: String,
    #[source]
    source: tantivy::TantivyError,
}

/// One page found.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DocHit {
    /// The provider's address.
    pub provider: String,
    /// The version.
    pub version: String,
    /// What the page describes.
    pub kind: DocKind,
    /// Its name.
    pub name: String,
    /// Its title.
    pub title: String,
}

/// The fields of the index.
struct Fields {
    /// `provider@version`: what a version's pages are deleted by.
    key: Field,
    provider: Field,
    version: Field,
    kind: Field,
    /// The page's name as written, shown.
    name: Field,
    /// Its name and, where the provider's type is not already its start,
    /// `TYPE_NAME`, each whole and in lower case: what a name is found by.
    names: Field,
    title: Field,
    text: Field,
}

/// The index, its writer and its reader.
pub struct DocIndex {
    dir: String,
    index: Index,
    fields: Fields,
    writer: Mutex<IndexWriter>,
    reader: IndexReader,
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
            key: schema.add_text_field("key", STRING),
            provider: schema.add_text_field("provider", STRING | STORED),
            version: schema.add_text_field("version", STRING | STORED),
            kind: schema.add_text_field("kind", STRING | STORED),
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
            writer: Mutex::new(writer),
            reader,
        })
    }

    fn fail(&self, source: tantivy::TantivyError) -> IndexError {
        IndexError {
            dir: self.dir.clone(),
            source,
        }
    }

    /// Puts `docs`' pages, each with its content, in the index in place of
    /// any the version had there; seen by searches once
    /// [`DocIndex::commit`] is called.
    pub fn add_version<'a>(
        &self,
        docs: &VersionDocs,
        pages: impl IntoIterator<Item = (&'a PageEntry, String)>,
    ) -> Result<(), IndexError> {
        let f = &self.fields;
        let provider = docs.provider.to_string();
        let version = docs.version.to_string();
        let key = format!("{provider}@{version}");
        let prefix = format!("{}_", docs.provider.kind);
        let writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        writer.delete_term(Term::from_field_text(f.key, &key));
        for (page, content) in pages {
            let mut doc = TantivyDocument::default();
            doc.add_text(f.key, &key);
            doc.add_text(f.provider, &provider);
            doc.add_text(f.version, &version);
            doc.add_text(f.kind, page.kind.as_str());
            doc.add_text(f.name, page.name.as_str());
            doc.add_text(f.names, page.name.as_str());
            if !page.name.as_str().starts_with(&prefix) {
                doc.add_text(f.names, format!("{prefix}{}", page.name));
            }
            doc.add_text(f.title, &page.title);
            doc.add_text(f.text, &content);
            writer.add_document(doc).map_err(|e| self.fail(e))?;
        }
        Ok(())
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
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        writer.commit().map_err(|e| self.fail(e))?;
        drop(writer);
        self.reader.reload().map_err(|e| self.fail(e))
    }

    /// The pages `query` finds, best first, at most `limit`: every word
    /// in the page's name, title or text, a whole name first, then a
    /// title.
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
                provider: text(f.provider),
                version: text(f.version),
                kind,
                name: text(f.name),
                title: text(f.title),
            });
        }
        Ok(hits)
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
