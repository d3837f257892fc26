//! Which texts a user's dense index holds vectors for, by content key, so a write can take the
//! vector of a text embedded before instead of running the embedder again.

use std::collections::HashMap;

/// Content key of one embedder input: the SHA-256 of the exact text sent to the embedder. The
/// caller computes it (core does no hashing of its own); an index only ever holds one
/// embedder's vectors, so the key needs no model name.
pub type TextKey = [u8; 32];

/// Where in a [`DenseIndex`](super::DenseIndex) the vector of each embedded text sits: the
/// (slot, window) of every slot holding it, and each slot's keys, so that replacing or removing
/// a slot's vectors drops what they no longer answer for.
#[derive(Clone, Default)]
pub(crate) struct EmbeddedTexts {
    holders: HashMap<TextKey, Vec<(u32, u32)>>,
    by_slot: HashMap<u32, Vec<TextKey>>,
}

impl EmbeddedTexts {
    /// `slot` now holds one vector per key, in window order (replacing what it held).
    pub(crate) fn record(&mut self, slot: u32, keys: &[TextKey]) {
        self.drop_slot(slot);
        if keys.is_empty() {
            return;
        }
        for (window, key) in (0u32..).zip(keys) {
            self.holders.entry(*key).or_default().push((slot, window));
        }
        self.by_slot.insert(slot, keys.to_vec());
    }

    /// `slot`'s vectors are gone or replaced: its keys no longer point at it.
    pub(crate) fn drop_slot(&mut self, slot: u32) {
        let Some(keys) = self.by_slot.remove(&slot) else {
            return;
        };
        for key in keys {
            if let Some(holders) = self.holders.get_mut(&key) {
                holders.retain(|&(s, _)| s != slot);
                if holders.is_empty() {
                    self.holders.remove(&key);
                }
            }
        }
    }

    /// A (slot, window) holding the text with this key.
    pub(crate) fn find(&self, key: &TextKey) -> Option<(u32, u32)> {
        self.holders.get(key)?.first().copied()
    }

    /// Distinct texts held.
    pub(crate) fn len(&self) -> usize {
        self.holders.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_stays_findable_while_any_slot_holds_it() {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        let mut texts = EmbeddedTexts::default();
        texts.record(0, &[a]);
        texts.record(1, &[b, a]);
        assert_eq!(texts.find(&b), Some((1, 0)));
        texts.drop_slot(0);
        assert_eq!(texts.find(&a), Some((1, 1)), "slot 1 still holds it");
        // Replacing slot 1's vectors forgets its old texts.
        texts.record(1, &[b]);
        assert_eq!(texts.find(&a), None);
        assert_eq!(texts.len(), 1);
        texts.drop_slot(1);
        assert_eq!(texts.len(), 0);
    }
}
