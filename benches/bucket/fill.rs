//! Copies a cache directory (such as `bench-scale-cache` writes) into a
//! bucket, below a prefix, in the same layout: how the bucket benchmark
//! gets a bucket of a million archives without importing them one bundle
//! at a time.
//!
//! Usage: `bench-bucket-fill CACHE_DIR ENDPOINT BUCKET PREFIX [CONCURRENCY]`,
//! with the bucket's credentials in `AWS_ACCESS_KEY_ID` and
//! `AWS_SECRET_ACCESS_KEY`. `CONCURRENCY` requests run at once (default
//! 64). Prints how many objects it wrote and how long it took.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use futures_util::{stream, StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

/// The files below `dir` (not `tmp/`), as paths relative to it.
fn files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            if dir == root && entry.file_name() == "tmp" {
                continue;
            }
            files(root, &path, out)?;
        } else {
            out.push(path.strip_prefix(root).expect("below the root").to_owned());
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, endpoint, bucket, prefix, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: bench-bucket-fill CACHE_DIR ENDPOINT BUCKET PREFIX [CONCURRENCY]");
    };
    let concurrency: usize = rest.first().map_or(Ok(64), |c| c.parse())?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let store: Arc<dyn ObjectStore> = Arc::new(
        AmazonS3Builder::from_env()
            .with_endpoint(endpoint)
            .with_bucket_name(bucket)
            .with_region("us-east-1")
            .with_allow_http(true)
            .build()?,
    );
    let root = PathBuf::from(dir);
    let mut paths = Vec::new();
    files(&root, &root, &mut paths)?;
    let started = Instant::now();
    let total = paths.len();
    stream::iter(paths)
        .map(|rel| {
            let (store, root) = (store.clone(), root.clone());
            let key = Key::from(format!("{prefix}/{}", rel.to_string_lossy()));
            async move {
                let bytes = tokio::fs::read(root.join(&rel)).await?;
                store.put(&key, PutPayload::from(bytes)).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(concurrency)
        .try_for_each(|()| async { Ok(()) })
        .await?;
    println!(
        "{total} objects in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
