//! Corrections.
use super::{Correction, Found};
pub(super) struct Corrected { pub wrong: Option<String>, pub right: String }
impl Corrected {
    pub(super) fn placed(self, span: std::ops::Range<usize>) -> Correction {
        let right_key = super::normalize::correction_key(&self.right);
        let wrong_key = self.wrong.as_deref().map(super::normalize::correction_key);
        Correction { wrong: self.wrong, right: self.right, right_key, wrong_key, span }
    }
}
pub(super) fn english(_s: &str, _f: &[Found]) -> Option<Corrected> { None }
pub(super) fn chinese(_s: &str, _f: &[Found]) -> Option<Corrected> { None }
