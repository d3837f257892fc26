//! XLM-R's SentencePiece unigram tokenizer, as the model file defines it: each code point
//! through the normalization map, runs of spaces collapsed, a leading space added, spaces
//! written as `▁`, then the segmentation of highest total piece score (Viterbi), an unknown
//! character costing 10 below the worst piece.

use std::collections::HashMap;

use super::file::Vocabulary;

/// SentencePiece's word-boundary marker.
const METASPACE: char = '\u{2581}';

/// The tokenizer of one model file.
pub(crate) struct UnigramTokenizer {
    ids: HashMap<Box<[u8]>, u32>,
    scores: Vec<f32>,
    unknown_score: f32,
    longest_piece: usize,
    bos: u32,
    eos: u32,
    unk: u32,
    normalization: HashMap<char, Vec<char>>,
}

/// The best segmentation found so far ending at one character boundary.
#[derive(Clone, Copy)]
struct Best {
    score: f32,
    /// Token id of the last piece, `None` for an unknown character.
    piece: Option<u32>,
    /// Character index where that piece starts.
    from: usize,
}

impl UnigramTokenizer {
    pub(crate) fn new(vocabulary: Vocabulary) -> Self {
        let mut ids = HashMap::with_capacity(vocabulary.pieces.len());
        let mut longest_piece = 1;
        for (id, piece) in vocabulary.pieces.into_iter().enumerate() {
            if piece.is_empty() {
                continue;
            }
            longest_piece = longest_piece.max(piece.len());
            // The first of two equal pieces wins, as in the reference's lookup.
            ids.entry(piece).or_insert(id as u32);
        }
        let worst = vocabulary
            .scores
            .iter()
            .copied()
            .fold(f32::INFINITY, f32::min);
        UnigramTokenizer {
            ids,
            unknown_score: if worst.is_finite() { worst } else { 0.0 } - 10.0,
            scores: vocabulary.scores,
            longest_piece,
            bos: vocabulary.bos,
            eos: vocabulary.eos,
            unk: vocabulary.unk,
            normalization: vocabulary.normalization,
        }
    }

    /// The text's tokens in windows of at most `max_content` (at least 1), each within `<s>`
    /// and `</s>`, with the number of the text's tokens it holds. A text that fits is one
    /// window; a longer one is cut without overlap, as the reference engine does.
    pub(crate) fn windows(&self, text: &str, max_content: usize) -> Vec<(Vec<u32>, usize)> {
        let content = self.content(text);
        let chunks: Vec<&[u32]> = if content.is_empty() {
            vec![&[]]
        } else {
            content.chunks(max_content.max(1)).collect()
        };
        chunks
            .into_iter()
            .map(|chunk| {
                let mut ids = Vec::with_capacity(chunk.len() + 2);
                ids.push(self.bos);
                ids.extend_from_slice(chunk);
                ids.push(self.eos);
                (ids, chunk.len())
            })
            .collect()
    }

    /// The text's tokens, without `<s>` and `</s>`.
    pub(crate) fn content(&self, text: &str) -> Vec<u32> {
        let normalized = self.normalize(text);
        // Byte offset of every character boundary of the normalized text.
        let mut bytes = String::with_capacity(normalized.len() * 3);
        let mut bounds = Vec::with_capacity(normalized.len() + 1);
        for c in normalized {
            bounds.push(bytes.len());
            bytes.push(c);
        }
        bounds.push(bytes.len());
        self.segment(bytes.as_bytes(), &bounds)
    }

    /// Normalized code points, spaces collapsed, the leading `▁` added and spaces as `▁`.
    fn normalize(&self, text: &str) -> Vec<char> {
        let mut mapped: Vec<char> = Vec::with_capacity(text.len() + 1);
        for c in text.chars() {
            match self.normalization.get(&c) {
                Some(replacement) => mapped.extend(replacement),
                None => mapped.push(c),
            }
        }
        mapped.dedup_by(|c, previous| *c == ' ' && *previous == ' ');
        let mut out = Vec::with_capacity(mapped.len() + 1);
        if mapped.first() != Some(&' ') {
            out.push(METASPACE);
        }
        out.extend(
            mapped
                .into_iter()
                .map(|c| if c == ' ' { METASPACE } else { c }),
        );
        out
    }

    /// Viterbi over the pieces; ties keep the first segmentation found.
    fn segment(&self, bytes: &[u8], bounds: &[usize]) -> Vec<u32> {
        let chars = bounds.len() - 1;
        let unreached = Best {
            score: f32::NEG_INFINITY,
            piece: None,
            from: 0,
        };
        let mut best = vec![unreached; chars + 1];
        best[0].score = 0.0;
        for start in 0..chars {
            let here = best[start].score;
            if here == f32::NEG_INFINITY {
                continue;
            }
            for end in start + 1..=chars {
                let piece = &bytes[bounds[start]..bounds[end]];
                if piece.len() > self.longest_piece {
                    break;
                }
                let Some(&id) = self.ids.get(piece) else {
                    continue;
                };
                let score = here + self.scores.get(id as usize).copied().unwrap_or(0.0);
                if id != self.unk && score > best[end].score {
                    best[end] = Best {
                        score,
                        piece: Some(id),
                        from: start,
                    };
                }
            }
            let unknown = here + self.unknown_score;
            if unknown > best[start + 1].score {
                best[start + 1] = Best {
                    score: unknown,
                    piece: None,
                    from: start,
                };
            }
        }
        let mut ids = Vec::new();
        let mut at = chars;
        while at > 0 {
            let step = best[at];
            ids.push(step.piece.unwrap_or(self.unk));
            at = step.from;
        }
        ids.reverse();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokenizer() -> UnigramTokenizer {
        let pieces = [
            "<s>", "<pad>", "</s>", "<unk>", "▁", "▁hello", "▁he", "llo", "l", "o", "好",
        ];
        let scores = [0.0, 0.0, 0.0, 0.0, -2.0, -3.0, -2.5, -2.0, -4.0, -4.0, -5.0];
        UnigramTokenizer::new(Vocabulary {
            pieces: pieces.iter().map(|p| Box::from(p.as_bytes())).collect(),
            scores: scores.to_vec(),
            bos: 0,
            eos: 2,
            unk: 3,
            normalization: HashMap::from([('Ｈ', vec!['h']), ('\u{200b}', vec![])]),
        })
    }

    #[test]
    fn the_best_scoring_segmentation_wins() {
        let t = tokenizer();
        // "▁hello" (−3) beats "▁he" + "llo" (−4.5).
        assert_eq!(t.content("hello"), vec![5]);
        assert_eq!(t.windows("hello", 10), vec![(vec![0, 5, 2], 1)]);
    }

    #[test]
    fn spaces_collapse_and_become_metaspace() {
        let t = tokenizer();
        assert_eq!(t.content("hello   hello"), vec![5, 5]);
        // A leading space is not doubled.
        assert_eq!(t.content(" hello"), vec![5]);
    }

    #[test]
    fn normalization_maps_and_deletes_code_points() {
        let t = tokenizer();
        assert_eq!(t.content("Ｈello\u{200b}"), vec![5]);
    }

    #[test]
    fn unknown_characters_are_one_unk_each() {
        let t = tokenizer();
        assert_eq!(t.content("好x"), vec![4, 10, 3]);
        assert_eq!(t.content("xy"), vec![4, 3, 3]);
    }

    #[test]
    fn long_texts_are_cut_into_windows_without_overlap() {
        let t = tokenizer();
        assert_eq!(
            t.windows("hello hello hello", 2),
            vec![(vec![0, 5, 5, 2], 2), (vec![0, 5, 2], 1)]
        );
        assert_eq!(t.windows("", 4), vec![(vec![0, 4, 2], 1)]);
    }
}
