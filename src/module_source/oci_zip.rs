//! A module package as the one `archive/zip` layer of an OCI module
//! artifact (`application/vnd.opentofu.modulepkg`), made the same way
//! every time: the package's entries in its own (bytewise path) order,
//! every entry stored uncompressed with the time 1980-01-01 00:00:00 and
//! the package's modes (`0755` directories and executables, `0644` other
//! files), no extra fields. Storing rather than deflating keeps the bytes
//! independent of any compression library's version, so the same package
//! has the same digest on every tfmirror, now and after upgrades.

use std::fs::File;
use std::io::{self, BufReader, BufWriter};
use std::path::Path;

use flate2::read::GzDecoder;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use super::tree::TreeError;

/// Writes the zip of the package (the mirror's `tar.gz`) at `package` to
/// `out`.
pub fn package_to_zip(package: &Path, out: &Path) -> Result<(), TreeError> {
    let input = BufReader::new(File::open(package)?);
    let output = BufWriter::new(File::create(out)?);
    let mut writer = ZipWriter::new(output);
    let mut archive = tar::Archive::new(GzDecoder::new(input));
    let unreadable = |e: io::Error| TreeError::Unreadable(e.to_string());
    let zipped = |e: zip::result::ZipError| TreeError::Io(io::Error::other(e));
    for entry in archive.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        let path = entry.path().map_err(unreadable)?;
        let name = path
            .to_str()
            .ok_or_else(|| {
                TreeError::Refused(format!("a name that is not UTF-8: {}", path.display()))
            })?
            .trim_end_matches('/')
            .to_owned();
        let mode = entry.header().mode().map_err(unreadable)? & 0o777;
        let options = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Stored)
            .last_modified_time(DateTime::DEFAULT)
            .unix_permissions(mode);
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            writer
                .add_directory(format!("{name}/"), options)
                .map_err(zipped)?;
        } else if kind.is_file() {
            writer.start_file(name, options).map_err(zipped)?;
            io::copy(&mut entry, &mut writer)?;
        } else if kind.is_symlink() {
            let target = entry
                .link_name()
                .map_err(unreadable)?
                .ok_or_else(|| TreeError::Refused(format!("a link without a target: {name}")))?;
            let target = target.to_string_lossy().into_owned();
            writer.add_symlink(name, target, options).map_err(zipped)?;
        } else {
            return Err(TreeError::Refused(format!(
                "an entry of a kind a zip does not carry: {name}"
            )));
        }
    }
    writer
        .finish()
        .map_err(zipped)?
        .into_inner()
        .map_err(io::IntoInnerError::into_error)?
        .sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn packed(dir: &Path, files: &[(&str, &str)]) -> std::path::PathBuf {
        let root = dir.join("tree");
        for (name, text) in files {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let out = dir.join("package.tar.gz");
        let mut file = File::create(&out).unwrap();
        crate::module_source::tree::pack(&root, &mut file, 1 << 20).unwrap();
        out
    }

    #[test]
    fn the_same_package_always_gives_the_same_zip_with_every_file() {
        let files = [
            ("main.tf", "variable \"a\" {}\n"),
            ("modules/b/main.tf", "# b\n"),
        ];
        let one = tempfile::tempdir().unwrap();
        let two = tempfile::tempdir().unwrap();
        let (a, b) = (packed(one.path(), &files), packed(two.path(), &files));
        package_to_zip(&a, &one.path().join("p.zip")).unwrap();
        package_to_zip(&b, &two.path().join("p.zip")).unwrap();
        let first = std::fs::read(one.path().join("p.zip")).unwrap();
        assert_eq!(first, std::fs::read(two.path().join("p.zip")).unwrap());
        let mut zip = zip::ZipArchive::new(io::Cursor::new(first)).unwrap();
        let mut text = String::new();
        zip.by_name("modules/b/main.tf")
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "# b\n");
        assert!(zip.by_name("main.tf").is_ok());

        let changed = tempfile::tempdir().unwrap();
        let c = packed(changed.path(), &[("main.tf", "variable \"b\" {}\n")]);
        package_to_zip(&c, &changed.path().join("p.zip")).unwrap();
        assert_ne!(
            std::fs::read(one.path().join("p.zip")).unwrap(),
            std::fs::read(changed.path().join("p.zip")).unwrap()
        );
    }
}
