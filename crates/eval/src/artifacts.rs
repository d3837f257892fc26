//! An evaluation's output directory and the checksums of its inputs.
//!
//! A run writes everything it produces under one [`OutDir`]: JSON summaries, text reports, JSONL
//! per-question records and a `plots/` subdirectory. Creating it refuses a non-empty directory
//! unless asked to overwrite, so one run never silently mixes its files with another's.
//! [`checksum_inputs`] records which exact dataset bytes a run measured.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Component, Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

/// Name of the plots subdirectory of every [`OutDir`].
pub const PLOTS_DIR: &str = "plots";

/// Why an output directory or input checksum could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// Reading or writing `path` failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// [`OutDir::create`] found earlier contents and was not allowed to overwrite.
    #[error(
        "output directory {} already exists and is not empty; choose another or allow overwrite",
        path.display()
    )]
    NotEmpty { path: PathBuf },
    /// [`OutDir::create`] was given an existing file.
    #[error("output path {} exists and is not a directory", path.display())]
    NotADirectory { path: PathBuf },
    /// A value could not be serialized.
    #[error("cannot serialize JSON for {}: {source}", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A file name was empty, absolute or tried to leave the directory.
    #[error("invalid artifact name {name:?}: must be a relative path without '..'")]
    InvalidName { name: String },
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> ArtifactError + '_ {
    move |source| ArtifactError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Hex SHA-256 of a file's contents, read in chunks so large datasets are never held in memory.
pub fn sha256_file(path: &Path) -> Result<String, io::Error> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let read = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Size and SHA-256 of one input file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputChecksum {
    /// The path as given, or for a file found under a given directory, that directory joined
    /// with the file's path relative to it (never made absolute).
    pub path: PathBuf,
    /// File size in bytes.
    pub bytes: u64,
    /// Hex SHA-256 of the contents.
    pub sha256: String,
}

/// Checksums every input, in the order given. A directory stands for every regular file under
/// it (recursively, sorted by relative path); symbolic links to files are followed, links to
/// directories are not (they could form cycles).
pub fn checksum_inputs(paths: &[PathBuf]) -> Result<Vec<InputChecksum>, ArtifactError> {
    let mut sums = Vec::new();
    for input in paths {
        let meta = fs::metadata(input).map_err(io_error(input))?;
        let files = if meta.is_dir() {
            let mut relative = Vec::new();
            collect_files(input, Path::new(""), &mut relative)?;
            relative.sort();
            relative.into_iter().map(|rel| input.join(rel)).collect()
        } else {
            vec![input.clone()]
        };
        for path in files {
            let bytes = fs::metadata(&path).map_err(io_error(&path))?.len();
            let sha256 = sha256_file(&path).map_err(io_error(&path))?;
            sums.push(InputChecksum {
                path,
                bytes,
                sha256,
            });
        }
    }
    Ok(sums)
}

/// Adds to `found` the paths, relative to `root`, of regular files under `root/relative`.
fn collect_files(
    root: &Path,
    relative: &Path,
    found: &mut Vec<PathBuf>,
) -> Result<(), ArtifactError> {
    let dir = root.join(relative);
    for entry in fs::read_dir(&dir).map_err(io_error(&dir))? {
        let entry = entry.map_err(io_error(&dir))?;
        let rel = relative.join(entry.file_name());
        let kind = entry.file_type().map_err(io_error(&entry.path()))?;
        if kind.is_dir() {
            collect_files(root, &rel, found)?;
        } else if kind.is_file() {
            found.push(rel);
        } else if kind.is_symlink() {
            let target = fs::metadata(entry.path()).map_err(io_error(&entry.path()))?;
            if target.is_file() {
                found.push(rel);
            }
        }
    }
    Ok(())
}

/// An evaluation's output directory, with a `plots/` subdirectory.
#[derive(Debug, Clone)]
pub struct OutDir {
    root: PathBuf,
    plots: PathBuf,
}

impl OutDir {
    /// Creates `path` (and parents) and its `plots/` subdirectory.
    ///
    /// An existing empty directory is used as is. An existing non-empty one is refused unless
    /// `overwrite` is true; then files written are replaced, and files not written again are
    /// left in place (nothing is deleted).
    pub fn create(path: &Path, overwrite: bool) -> Result<OutDir, ArtifactError> {
        match fs::metadata(path) {
            Ok(meta) if !meta.is_dir() => {
                return Err(ArtifactError::NotADirectory {
                    path: path.to_path_buf(),
                })
            }
            Ok(_) => {
                let non_empty = fs::read_dir(path).map_err(io_error(path))?.next().is_some();
                if non_empty && !overwrite {
                    return Err(ArtifactError::NotEmpty {
                        path: path.to_path_buf(),
                    });
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(path)(e)),
        }
        let plots = path.join(PLOTS_DIR);
        fs::create_dir_all(&plots).map_err(io_error(&plots))?;
        Ok(OutDir {
            root: path.to_path_buf(),
            plots,
        })
    }

    /// The directory itself.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The `plots/` subdirectory, where charts go.
    pub fn plots_dir(&self) -> &Path {
        &self.plots
    }

    /// Writes `value` as pretty JSON (with a final newline) to `name` inside the directory and
    /// returns the file's path.
    pub fn write_json(&self, name: &str, value: &impl Serialize) -> Result<PathBuf, ArtifactError> {
        let path = self.file_path(name)?;
        let mut json = serde_json::to_vec_pretty(value).map_err(|source| ArtifactError::Json {
            path: path.clone(),
            source,
        })?;
        json.push(b'\n');
        fs::write(&path, json).map_err(io_error(&path))?;
        Ok(path)
    }

    /// Writes `text` to `name` inside the directory and returns the file's path.
    pub fn write_text(&self, name: &str, text: &str) -> Result<PathBuf, ArtifactError> {
        let path = self.file_path(name)?;
        fs::write(&path, text).map_err(io_error(&path))?;
        Ok(path)
    }

    /// Creates (or truncates) `name` inside the directory for one JSON value per line.
    pub fn jsonl_writer(&self, name: &str) -> Result<JsonlWriter, ArtifactError> {
        let path = self.file_path(name)?;
        let file = File::create(&path).map_err(io_error(&path))?;
        Ok(JsonlWriter {
            out: BufWriter::new(file),
            path,
            lines: 0,
        })
    }

    /// `name` resolved inside the directory, refusing anything that could escape it; parent
    /// directories of a nested name are created.
    fn file_path(&self, name: &str) -> Result<PathBuf, ArtifactError> {
        let relative = Path::new(name);
        let only_normal = relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)));
        if name.is_empty() || !only_normal {
            return Err(ArtifactError::InvalidName {
                name: name.to_string(),
            });
        }
        let path = self.root.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io_error(parent))?;
        }
        Ok(path)
    }
}

/// Writes one JSON value per line, flushing after each so a crashed run keeps every complete
/// record. Call [`JsonlWriter::finish`] to learn of a failed final flush.
#[derive(Debug)]
pub struct JsonlWriter {
    out: BufWriter<File>,
    path: PathBuf,
    lines: u64,
}

impl JsonlWriter {
    /// Appends `value` as one line. It is serialized completely before anything is written, so
    /// a value that fails to serialize leaves no partial line.
    pub fn write(&mut self, value: &impl Serialize) -> Result<(), ArtifactError> {
        let mut line = serde_json::to_vec(value).map_err(|source| ArtifactError::Json {
            path: self.path.clone(),
            source,
        })?;
        line.push(b'\n');
        self.out.write_all(&line).map_err(io_error(&self.path))?;
        self.out.flush().map_err(io_error(&self.path))?;
        self.lines += 1;
        Ok(())
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes and syncs the file to disk; returns the number of lines written.
    pub fn finish(mut self) -> Result<u64, ArtifactError> {
        self.out.flush().map_err(io_error(&self.path))?;
        self.out
            .get_ref()
            .sync_all()
            .map_err(io_error(&self.path))?;
        Ok(self.lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serializer;

    // SHA-256 of "abc" and of the empty string (FIPS 180-2 test vectors).
    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
    const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn artifacts_sha256_file_matches_known_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let abc = dir.path().join("abc");
        fs::write(&abc, "abc").unwrap();
        assert_eq!(sha256_file(&abc).unwrap(), ABC);
        let empty = dir.path().join("empty");
        fs::write(&empty, "").unwrap();
        assert_eq!(sha256_file(&empty).unwrap(), EMPTY);

        // Larger than one read buffer: chunked hashing equals hashing it whole.
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let big_path = dir.path().join("big");
        fs::write(&big_path, &big).unwrap();
        assert_eq!(
            sha256_file(&big_path).unwrap(),
            hex::encode(Sha256::digest(&big))
        );

        let err = sha256_file(&dir.path().join("missing")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn artifacts_checksum_inputs_expands_directories_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        fs::create_dir_all(data.join("b/inner")).unwrap();
        fs::create_dir_all(data.join("a")).unwrap();
        fs::write(data.join("z.json"), "abc").unwrap();
        fs::write(data.join("b/inner/x.jsonl"), "").unwrap();
        fs::write(data.join("a/y.txt"), "hello").unwrap();
        let single = dir.path().join("single.txt");
        fs::write(&single, "abc").unwrap();

        let sums = checksum_inputs(&[single.clone(), data.clone()]).unwrap();
        let paths: Vec<&Path> = sums.iter().map(|s| s.path.as_path()).collect();
        assert_eq!(
            paths,
            [
                single.as_path(),
                &data.join("a/y.txt"),
                &data.join("b/inner/x.jsonl"),
                &data.join("z.json"),
            ]
        );
        assert_eq!(sums[0].bytes, 3);
        assert_eq!(sums[0].sha256, ABC);
        assert_eq!(sums[1].bytes, 5);
        assert_eq!(sums[2].sha256, EMPTY);
        assert_eq!(sums[3].sha256, ABC);

        let json = serde_json::to_value(&sums[0]).unwrap();
        assert_eq!(json["bytes"], 3);
        assert_eq!(json["sha256"], ABC);

        let err = checksum_inputs(&[dir.path().join("missing")]).unwrap_err();
        assert!(matches!(err, ArtifactError::Io { .. }), "{err}");
        assert!(err.to_string().contains("missing"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn artifacts_checksum_inputs_follows_file_links_not_directory_links() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        fs::create_dir_all(&data).unwrap();
        fs::write(data.join("real.txt"), "abc").unwrap();
        std::os::unix::fs::symlink(data.join("real.txt"), data.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(&data, data.join("loop")).unwrap();
        let sums = checksum_inputs(std::slice::from_ref(&data)).unwrap();
        let names: Vec<_> = sums
            .iter()
            .map(|s| s.path.strip_prefix(&data).unwrap().to_path_buf())
            .collect();
        assert_eq!(
            names,
            [PathBuf::from("link.txt"), PathBuf::from("real.txt")]
        );
    }

    #[test]
    fn artifacts_out_dir_creates_and_refuses_non_empty() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("runs/first");
        let out = OutDir::create(&root, false).unwrap();
        assert_eq!(out.path(), root);
        assert_eq!(out.plots_dir(), root.join("plots"));
        assert!(root.join("plots").is_dir());

        // Only the plots dir inside: not empty any more, so a second run is refused.
        let err = OutDir::create(&root, false).unwrap_err();
        assert!(matches!(err, ArtifactError::NotEmpty { .. }), "{err}");
        assert!(err.to_string().contains("allow overwrite"), "{err}");

        out.write_text("keep.txt", "old").unwrap();
        let again = OutDir::create(&root, true).unwrap();
        assert_eq!(again.path(), root);
        assert_eq!(fs::read_to_string(root.join("keep.txt")).unwrap(), "old");

        // An existing empty directory is fine without overwrite.
        let empty = dir.path().join("empty");
        fs::create_dir(&empty).unwrap();
        OutDir::create(&empty, false).unwrap();

        let file = dir.path().join("file");
        fs::write(&file, "x").unwrap();
        let err = OutDir::create(&file, true).unwrap_err();
        assert!(matches!(err, ArtifactError::NotADirectory { .. }), "{err}");
    }

    #[derive(Serialize)]
    struct Summary {
        name: &'static str,
        recall: f64,
    }

    #[test]
    fn artifacts_write_json_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::create(&dir.path().join("out"), false).unwrap();
        let path = out
            .write_json(
                "summary.json",
                &Summary {
                    name: "bm25",
                    recall: 0.5,
                },
            )
            .unwrap();
        assert_eq!(path, out.path().join("summary.json"));
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text, "{\n  \"name\": \"bm25\",\n  \"recall\": 0.5\n}\n");

        let report = out.write_text("reports/README.md", "# Run\n").unwrap();
        assert_eq!(report, out.path().join("reports/README.md"));
        assert_eq!(fs::read_to_string(report).unwrap(), "# Run\n");

        for bad in ["", "../escape.txt", "/abs.txt", "a/../../b", "./x"] {
            let err = out.write_text(bad, "x").unwrap_err();
            assert!(
                matches!(err, ArtifactError::InvalidName { .. }),
                "{bad}: {err}"
            );
        }
        assert!(!dir.path().join("escape.txt").exists());
    }

    /// Serializes to an error, like a map with non-string keys would.
    struct Unserializable;
    impl Serialize for Unserializable {
        fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("refused"))
        }
    }

    #[test]
    fn artifacts_jsonl_writer_flushes_each_line() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::create(dir.path(), false).unwrap();
        let mut writer = out.jsonl_writer("records.jsonl").unwrap();
        assert_eq!(writer.path(), out.path().join("records.jsonl"));
        writer
            .write(&Summary {
                name: "a",
                recall: 1.0,
            })
            .unwrap();
        // Visible on disk before finish: a crash now would keep this line.
        assert_eq!(
            fs::read_to_string(writer.path()).unwrap(),
            "{\"name\":\"a\",\"recall\":1.0}\n"
        );

        let err = writer.write(&Unserializable).unwrap_err();
        assert!(matches!(err, ArtifactError::Json { .. }), "{err}");
        writer
            .write(&serde_json::json!({"k": "line\nbreak"}))
            .unwrap();
        assert_eq!(writer.lines(), 2);
        let path = writer.path().to_path_buf();
        assert_eq!(writer.finish().unwrap(), 2);

        let text = fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "{\"name\":\"a\",\"recall\":1.0}",
                "{\"k\":\"line\\nbreak\"}"
            ]
        );
    }
}
