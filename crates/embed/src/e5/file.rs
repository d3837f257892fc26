//! The packed multilingual-e5-small file (`e5-small-q4.bin`, format `E5S1` version 1): a header
//! with the encoder's shape, the SentencePiece vocabulary with its scores and normalization map,
//! and a directory of tensors, each either f32 or Q4_0.
//!
//! Layout (little endian): magic `E5S1`, u32 version, i32 hidden, layers, heads, ffn, vocab,
//! max positions, type vocab, f32 layer-norm epsilon, i32 block size (32); i32 pieces, bos,
//! eos, pad, unk, u64 blob length, u32 × (pieces + 1) piece offsets, f32 × pieces scores, the
//! piece bytes; i32 normalization entries, u32 map bytes, the map (u32 code point, u8 count,
//! u32 × count replacement); i32 tensors, then per tensor u16 name length, name, u8 dtype
//! (0 f32, 1 Q4_0), u32 element count, u64 offset, u64 byte length.
//!
//! A Q4_0 block holds 32 weights: an f16 scale `d`, then 16 bytes whose low nibbles are weights
//! 0–15 and high nibbles weights 16–31, each `(nibble − 8) · d`. A matrix `[rows, cols]` is
//! stored row by row, `cols / 32` blocks per row.

use std::collections::HashMap;

/// Weights per Q4_0 block.
pub(crate) const BLOCK: usize = 32;
/// Bytes per Q4_0 block: the f16 scale and 16 bytes of nibbles.
pub(crate) const BLOCK_BYTES: usize = 18;

/// Why a model file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("not an e5 model file (magic {0:?}, expected \"E5S1\")")]
    Magic([u8; 4]),
    #[error("unsupported e5 model file version {0} (this build reads version 1)")]
    Version(u32),
    #[error("the file ends inside {0}")]
    Truncated(&'static str),
    #[error("{0} is out of range")]
    Range(&'static str),
    #[error("the file has no tensor {0}")]
    Missing(String),
    #[error("tensor {name} is {got}, expected {expected}")]
    Tensor {
        name: String,
        got: String,
        expected: String,
    },
}

/// The encoder's shape, from the header.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Shape {
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub ffn: usize,
    pub vocab: usize,
    pub max_positions: usize,
    pub layer_norm_eps: f32,
}

/// The SentencePiece tables: piece bytes and scores by token id, special ids, and the
/// per-code-point normalization map.
pub(crate) struct Vocabulary {
    pub pieces: Vec<Box<[u8]>>,
    pub scores: Vec<f32>,
    pub bos: u32,
    pub eos: u32,
    pub unk: u32,
    pub normalization: HashMap<char, Vec<char>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DType {
    F32,
    Q4,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    dtype: DType,
    count: usize,
    offset: usize,
    bytes: usize,
}

/// A parsed model file; tensors are read out of its bytes on demand.
pub(crate) struct E5File {
    bytes: Vec<u8>,
    pub shape: Shape,
    pub vocabulary: Vocabulary,
    tensors: HashMap<String, Entry>,
}

/// A bounds-checked little-endian reader.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], FormatError> {
        let end = self.at.checked_add(n).ok_or(FormatError::Truncated(what))?;
        let slice = self
            .bytes
            .get(self.at..end)
            .ok_or(FormatError::Truncated(what))?;
        self.at = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], FormatError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, FormatError> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, FormatError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn f32(&mut self, what: &'static str) -> Result<f32, FormatError> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }

    /// A non-negative i32 as a count or size.
    fn size(&mut self, what: &'static str) -> Result<usize, FormatError> {
        let v = i32::from_le_bytes(self.array(what)?);
        usize::try_from(v).map_err(|_| FormatError::Range(what))
    }

    fn to_usize(v: u64, what: &'static str) -> Result<usize, FormatError> {
        usize::try_from(v).map_err(|_| FormatError::Range(what))
    }
}

impl E5File {
    /// Parse a whole model file.
    pub(crate) fn parse(bytes: Vec<u8>) -> Result<Self, FormatError> {
        let mut c = Cursor {
            bytes: &bytes,
            at: 0,
        };
        let magic: [u8; 4] = c.array("the magic")?;
        if &magic != b"E5S1" {
            return Err(FormatError::Magic(magic));
        }
        let version = c.u32("the version")?;
        if version != 1 {
            return Err(FormatError::Version(version));
        }
        let shape = read_shape(&mut c)?;
        let vocabulary = read_vocabulary(&mut c)?;
        let tensors = read_directory(&mut c, bytes.len())?;
        Ok(E5File {
            bytes,
            shape,
            vocabulary,
            tensors,
        })
    }

    fn entry(&self, name: &str, dtype: DType, count: usize) -> Result<Entry, FormatError> {
        let entry = *self
            .tensors
            .get(name)
            .ok_or_else(|| FormatError::Missing(name.to_string()))?;
        if entry.dtype != dtype || entry.count != count {
            return Err(FormatError::Tensor {
                name: name.to_string(),
                got: format!("{:?} × {}", entry.dtype, entry.count),
                expected: format!("{dtype:?} × {count}"),
            });
        }
        Ok(entry)
    }

    /// An f32 tensor of `count` elements.
    pub(crate) fn f32s(&self, name: &str, count: usize) -> Result<Vec<f32>, FormatError> {
        let entry = self.entry(name, DType::F32, count)?;
        let bytes = self.slice(name, entry, count * 4)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    /// The raw Q4_0 blocks of a `[rows, cols]` matrix.
    pub(crate) fn q4_blocks(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
    ) -> Result<&[u8], FormatError> {
        if !cols.is_multiple_of(BLOCK) {
            return Err(FormatError::Range("a quantized row length"));
        }
        let entry = self.entry(name, DType::Q4, rows * cols)?;
        self.slice(name, entry, rows * cols / BLOCK * BLOCK_BYTES)
    }

    /// A Q4_0 `[rows, cols]` matrix as f32, row-major.
    pub(crate) fn q4_dequantized(
        &self,
        name: &str,
        rows: usize,
        cols: usize,
    ) -> Result<Vec<f32>, FormatError> {
        let blocks = self.q4_blocks(name, rows, cols)?;
        let mut out = vec![0f32; rows * cols];
        dequantize(blocks, &mut out);
        Ok(out)
    }

    fn slice(&self, name: &str, entry: Entry, expected: usize) -> Result<&[u8], FormatError> {
        if entry.bytes != expected {
            return Err(FormatError::Tensor {
                name: name.to_string(),
                got: format!("{} bytes", entry.bytes),
                expected: format!("{expected} bytes"),
            });
        }
        // The directory was checked against the file's length when it was read.
        self.bytes
            .get(entry.offset..entry.offset + entry.bytes)
            .ok_or(FormatError::Truncated("a tensor"))
    }
}

/// Dequantize consecutive Q4_0 blocks into `out` (32 weights per block).
pub(crate) fn dequantize(blocks: &[u8], out: &mut [f32]) {
    for (block, weights) in blocks
        .chunks_exact(BLOCK_BYTES)
        .zip(out.chunks_exact_mut(BLOCK))
    {
        let scale = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
        let (low, high) = weights.split_at_mut(BLOCK / 2);
        for (j, &byte) in block[2..].iter().enumerate() {
            low[j] = f32::from(i16::from(byte & 0x0f) - 8) * scale;
            high[j] = f32::from(i16::from(byte >> 4) - 8) * scale;
        }
    }
}

/// IEEE half precision to single (subnormals, infinities and NaN included).
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exponent = u32::from((h >> 10) & 0x1f);
    let mantissa = u32::from(h & 0x3ff);
    let bits = match (exponent, mantissa) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m · 2⁻²⁴, exact in f32.
            let value = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -value } else { value };
        }
        (31, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

fn read_shape(c: &mut Cursor<'_>) -> Result<Shape, FormatError> {
    let hidden = c.size("the hidden size")?;
    let layers = c.size("the layer count")?;
    let heads = c.size("the head count")?;
    let ffn = c.size("the feed-forward size")?;
    let vocab = c.size("the vocabulary size")?;
    let max_positions = c.size("the position count")?;
    let _type_vocab = c.size("the token type count")?;
    let layer_norm_eps = c.f32("the layer-norm epsilon")?;
    let block = c.size("the block size")?;
    if block != BLOCK || heads == 0 || hidden % heads != 0 || hidden % BLOCK != 0 {
        return Err(FormatError::Range("the header's shape"));
    }
    Ok(Shape {
        hidden,
        layers,
        heads,
        ffn,
        vocab,
        max_positions,
        layer_norm_eps,
    })
}

fn read_vocabulary(c: &mut Cursor<'_>) -> Result<Vocabulary, FormatError> {
    let count = c.size("the piece count")?;
    let special = |c: &mut Cursor<'_>, what| -> Result<u32, FormatError> {
        let id = c.size(what)?;
        if id >= count {
            return Err(FormatError::Range(what));
        }
        u32::try_from(id).map_err(|_| FormatError::Range(what))
    };
    let bos = special(c, "the <s> id")?;
    let eos = special(c, "the </s> id")?;
    let _pad = special(c, "the <pad> id")?;
    let unk = special(c, "the <unk> id")?;
    let blob_len = Cursor::to_usize(c.u64("the piece blob length")?, "the piece blob length")?;
    let mut offsets = Vec::with_capacity(count + 1);
    for _ in 0..=count {
        offsets.push(c.u32("the piece offsets")? as usize);
    }
    let mut scores = Vec::with_capacity(count);
    for _ in 0..count {
        scores.push(c.f32("the piece scores")?);
    }
    let blob = c.take(blob_len, "the piece bytes")?;
    let pieces = offsets
        .windows(2)
        .map(|w| {
            blob.get(w[0]..w[1])
                .map(Box::from)
                .ok_or(FormatError::Range("a piece offset"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let normalization = read_normalization(c)?;
    Ok(Vocabulary {
        pieces,
        scores,
        bos,
        eos,
        unk,
        normalization,
    })
}

fn read_normalization(c: &mut Cursor<'_>) -> Result<HashMap<char, Vec<char>>, FormatError> {
    let entries = c.size("the normalization entry count")?;
    let bytes = c.u32("the normalization map length")? as usize;
    let mut map = Cursor {
        bytes: c.take(bytes, "the normalization map")?,
        at: 0,
    };
    let char_of =
        |v: u32| char::from_u32(v).ok_or(FormatError::Range("a normalization code point"));
    let mut out = HashMap::with_capacity(entries);
    for _ in 0..entries {
        let from = char_of(map.u32("a normalization entry")?)?;
        let n = map.u8("a normalization entry")?;
        let to = (0..n)
            .map(|_| map.u32("a normalization entry").and_then(char_of))
            .collect::<Result<Vec<_>, _>>()?;
        out.insert(from, to);
    }
    Ok(out)
}

fn read_directory(
    c: &mut Cursor<'_>,
    file_len: usize,
) -> Result<HashMap<String, Entry>, FormatError> {
    let count = c.size("the tensor count")?;
    let mut out = HashMap::with_capacity(count);
    for _ in 0..count {
        let name_len = usize::from(c.u16("a tensor name")?);
        let name = String::from_utf8_lossy(c.take(name_len, "a tensor name")?).into_owned();
        let dtype = match c.u8("a tensor type")? {
            0 => DType::F32,
            1 => DType::Q4,
            _ => return Err(FormatError::Range("a tensor type")),
        };
        let count = c.u32("a tensor size")? as usize;
        let offset = Cursor::to_usize(c.u64("a tensor offset")?, "a tensor offset")?;
        let bytes = Cursor::to_usize(c.u64("a tensor length")?, "a tensor length")?;
        if offset.checked_add(bytes).is_none_or(|end| end > file_len) {
            return Err(FormatError::Truncated("a tensor"));
        }
        out.insert(
            name,
            Entry {
                dtype,
                count,
                offset,
                bytes,
            },
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_converts_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x0000), 0.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8001), -(2f32.powi(-24)));
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert!(f16_to_f32(0x7c00).is_infinite());
        assert_eq!(f16_to_f32(0x3555), 0.333_251_95);
    }

    #[test]
    fn a_block_holds_low_nibbles_then_high_nibbles() {
        // Scale 0.5; byte j = (j + 1) | (15 − j) << 4.
        let mut block = vec![0x00, 0x38];
        block.extend((0..16u8).map(|j| ((j + 1) & 0x0f) | ((15 - j) << 4)));
        let mut out = [0f32; 32];
        dequantize(&block, &mut out);
        for j in 0..16 {
            assert_eq!(out[j], (f32::from((j as u8 + 1) & 0x0f) - 8.0) * 0.5);
            assert_eq!(out[j + 16], (f32::from(15 - j as u8) - 8.0) * 0.5);
        }
    }

    #[test]
    fn a_foreign_or_cut_file_is_an_error_not_a_panic() {
        assert!(matches!(
            E5File::parse(b"GGUF\x01\0\0\0".to_vec()),
            Err(FormatError::Magic(_))
        ));
        assert!(matches!(
            E5File::parse(b"E5S1\x01\0\0\0\x80\x01".to_vec()),
            Err(FormatError::Truncated(_))
        ));
        assert!(matches!(
            E5File::parse(b"E5S1\x02\0\0\0".to_vec()),
            Err(FormatError::Version(2))
        ));
    }
}
