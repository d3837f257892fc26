//! One vector space for English and Chinese text from two monolingual models.
//!
//! No small local model embeds both languages well: all-MiniLM-L6-v2 reads Chinese as
//! characters it barely knows, m3e-small reads English as word pieces of a Chinese vocabulary.
//! The bilingual embedder gives each text both halves, weighted by how Chinese the text is:
//!
//! `v(t) = [ √(1−z(t)) · en(t) ; √z(t) · zh(t) ]`
//!
//! where `z(t)` is the text's Chinese share (CJK characters against Latin words, see
//! [`chinese_share`]) and `en`, `zh` are the unit vectors of the two models. `v` is a unit
//! vector, and the cosine of two texts is
//!
//! `√((1−z₁)(1−z₂)) · cos_en + √(z₁z₂) · cos_zh`
//!
//! so two English texts compare exactly as under MiniLM alone, two Chinese texts exactly as
//! under m3e alone, and mixed texts by both, in proportion. A pure English and a pure Chinese
//! text score 0 (neither model could compare them meaningfully anyway). A half with weight 0
//! is not computed, so a monolingual text costs one model pass.

use mnemos_core::{EmbedError, Embedder};
use mnemos_text::is_cjk;

/// The Chinese share of a text in [0, 1]: CJK characters / (CJK characters + Latin words),
/// counting one Chinese character as roughly one English word. A text with neither (digits,
/// punctuation, emoji only) is 0.5: both models see it equally.
pub fn chinese_share(text: &str) -> f32 {
    let mut cjk = 0usize;
    let mut words = 0usize;
    let mut in_word = false;
    for c in text.chars() {
        if is_cjk(c) {
            cjk += 1;
            in_word = false;
        } else if c.is_alphabetic() {
            if !in_word {
                words += 1;
            }
            in_word = true;
        } else {
            in_word = false;
        }
    }
    if cjk + words == 0 {
        return 0.5;
    }
    cjk as f32 / (cjk + words) as f32
}

/// An [`Embedder`] concatenating an English and a Chinese model's vectors, each scaled by the
/// text's language mix (module docs). Its id names both halves, so vectors stored under it are
/// never mixed with either model's own.
pub struct BilingualEmbedder {
    english: Box<dyn Embedder>,
    chinese: Box<dyn Embedder>,
    id: String,
}

impl std::fmt::Debug for BilingualEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BilingualEmbedder")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl BilingualEmbedder {
    /// Combine two embedders; both must return unit vectors (the local models do).
    pub fn new(english: Box<dyn Embedder>, chinese: Box<dyn Embedder>) -> Self {
        let id = format!("bilingual:{}+{}", english.id(), chinese.id());
        Self {
            english,
            chinese,
            id,
        }
    }

    /// Embed the texts with one half; `weights[i]` scales text i's vector, and texts with
    /// weight 0 are skipped (their rows stay zero).
    fn embed_half(
        half: &dyn Embedder,
        query: bool,
        texts: &[&str],
        weights: &[f32],
        offset: usize,
        out: &mut [Vec<f32>],
    ) -> Result<(), EmbedError> {
        let wanted: Vec<usize> = (0..texts.len()).filter(|&i| weights[i] > 0.0).collect();
        for chunk in wanted.chunks(half.max_batch().max(1)) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            let vectors = if query {
                half.embed_query_batch(&batch)?
            } else {
                half.embed_batch(&batch)?
            };
            if vectors.len() != chunk.len() {
                return Err(EmbedError::Count {
                    expected: chunk.len(),
                    got: vectors.len(),
                });
            }
            for (&i, v) in chunk.iter().zip(vectors) {
                if v.len() != half.dimension() {
                    return Err(EmbedError::Dimension {
                        expected: half.dimension(),
                        got: v.len(),
                    });
                }
                let w = weights[i];
                for (slot, x) in out[i][offset..offset + v.len()].iter_mut().zip(v) {
                    *slot = w * x;
                }
            }
        }
        Ok(())
    }
}

impl Embedder for BilingualEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.english.dimension() + self.chinese.dimension()
    }

    fn max_batch(&self) -> usize {
        self.english
            .max_batch()
            .min(self.chinese.max_batch())
            .max(1)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_both(false, texts)
    }

    fn embed_query_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_both(true, texts)
    }
}

impl BilingualEmbedder {
    /// Both halves of every text (as queries or as passages), weighted by its language mix.
    fn embed_both(&self, query: bool, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let shares: Vec<f32> = texts.iter().map(|t| chinese_share(t)).collect();
        let en_weights: Vec<f32> = shares.iter().map(|z| (1.0 - z).max(0.0).sqrt()).collect();
        let zh_weights: Vec<f32> = shares.iter().map(|z| z.max(0.0).sqrt()).collect();
        let mut out = vec![vec![0.0f32; self.dimension()]; texts.len()];
        Self::embed_half(
            self.english.as_ref(),
            query,
            texts,
            &en_weights,
            0,
            &mut out,
        )?;
        let offset = self.english.dimension();
        Self::embed_half(
            self.chinese.as_ref(),
            query,
            texts,
            &zh_weights,
            offset,
            &mut out,
        )?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HashEmbedder;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn embedder() -> BilingualEmbedder {
        BilingualEmbedder::new(
            Box::new(HashEmbedder::new(64).unwrap()),
            Box::new(HashEmbedder::new(96).unwrap()),
        )
    }

    #[test]
    fn chinese_share_counts_characters_against_words() {
        assert_eq!(chinese_share("I moved to Berlin."), 0.0);
        assert_eq!(chinese_share("我搬到了柏林。"), 1.0);
        assert!((chinese_share("我在Google工作") - 0.8).abs() < 1e-6);
        assert!((chinese_share("I love 北京") - 0.5).abs() < 1e-6);
        assert_eq!(chinese_share("12345 !!"), 0.5);
        assert_eq!(chinese_share(""), 0.5);
    }

    #[test]
    fn vectors_are_unit_and_monolingual_texts_use_one_half() {
        let e = embedder();
        assert_eq!(e.dimension(), 160);
        assert_eq!(e.id(), "bilingual:hash-v1-64+hash-v1-96");
        let v = e
            .embed_batch(&["I moved to Berlin.", "我搬到了柏林。", "我在Google工作"])
            .unwrap();
        for row in &v {
            let norm: f32 = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "{norm}");
        }
        assert!(
            v[0][64..].iter().all(|&x| x == 0.0),
            "English has no Chinese half"
        );
        assert!(
            v[1][..64].iter().all(|&x| x == 0.0),
            "Chinese has no English half"
        );
        assert!(v[2][..64].iter().any(|&x| x != 0.0) && v[2][64..].iter().any(|&x| x != 0.0));
    }

    #[test]
    fn same_language_cosines_are_the_halves_own() {
        let e = embedder();
        let en = HashEmbedder::new(64).unwrap();
        let zh = HashEmbedder::new(96).unwrap();
        let (a, b) = ("Ann moved to Berlin in May.", "Where does Ann live now?");
        let both = e.embed_batch(&[a, b]).unwrap();
        let alone = en.embed_batch(&[a, b]).unwrap();
        assert!((cosine(&both[0], &both[1]) - cosine(&alone[0], &alone[1])).abs() < 1e-5);
        let (c, d) = ("小伟在杭州做后端工程师。", "小伟在哪里工作？");
        let both = e.embed_batch(&[c, d]).unwrap();
        let alone = zh.embed_batch(&[c, d]).unwrap();
        assert!((cosine(&both[0], &both[1]) - cosine(&alone[0], &alone[1])).abs() < 1e-5);
        // Across languages there is nothing to compare.
        let cross = e.embed_batch(&[a, c]).unwrap();
        assert_eq!(cosine(&cross[0], &cross[1]), 0.0);
    }

    #[test]
    fn empty_batch_is_empty() {
        assert!(embedder().embed_batch(&[]).unwrap().is_empty());
    }
}
