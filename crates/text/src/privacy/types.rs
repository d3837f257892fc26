//! The privacy rules' result types, in a module of their own: the rules (`credentials`,
//! `forget`) build them and the parent module hands them out, so keeping them here lets both
//! sides name them without importing each other.

use std::ops::Range;

use crate::script::Language;

/// What kind of secret a [`Credential`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CredentialKind {
    /// A password, passphrase, PIN or passcode the line labels as such.
    Password,
    /// An API key or access token: a provider's key format, or a long random token after
    /// "key", "token", "secret", "密钥"….
    ApiKey,
    /// A payment card number (13–19 digits, issuer prefix, Luhn check digit).
    CardNumber,
    /// A US Social Security number, a Chinese resident id or a UK National Insurance number.
    NationalId,
}

impl CredentialKind {
    /// Stable lower-case name: "password", "api_key", "card_number", "national_id".
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialKind::Password => "password",
            CredentialKind::ApiKey => "api_key",
            CredentialKind::CardNumber => "card_number",
            CredentialKind::NationalId => "national_id",
        }
    }

    /// What [`redact_credentials`](super::redact_credentials) writes in place of a secret of this kind, in the text's
    /// language (Chinese for Chinese text, English otherwise), so the stored line still reads
    /// as a sentence and says what was there.
    pub fn placeholder(self, language: Language) -> &'static str {
        match (language, self) {
            (Language::Chinese, CredentialKind::Password) => "[已隐去密码]",
            (Language::Chinese, CredentialKind::ApiKey) => "[已隐去密钥]",
            (Language::Chinese, CredentialKind::CardNumber) => "[已隐去卡号]",
            (Language::Chinese, CredentialKind::NationalId) => "[已隐去证件号]",
            (_, CredentialKind::Password) => "[redacted password]",
            (_, CredentialKind::ApiKey) => "[redacted API key]",
            (_, CredentialKind::CardNumber) => "[redacted card number]",
            (_, CredentialKind::NationalId) => "[redacted ID number]",
        }
    }
}

/// A secret found in a text: what kind, and the byte range of the secret itself (not the words
/// around it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    pub kind: CredentialKind,
    pub span: Range<usize>,
}

/// A text with its credentials replaced by placeholders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redacted {
    /// The text, each secret replaced by [`CredentialKind::placeholder`].
    pub text: String,
    /// The kinds replaced, deduplicated, in order of first appearance; empty when nothing was
    /// replaced (and then `text` is the input unchanged).
    pub kinds: Vec<CredentialKind>,
}

/// A request to forget something.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForgetRequest {
    /// What to forget, in the user's words, cut to the noun phrase: "my passport number",
    /// "Alex", "my address", "我的住址", "我前男友". For "anything/everything about X" this is X.
    /// A request that names no subject ("forget everything", "把一切都忘了") has the words it
    /// used ("everything", "一切"), empty `terms` and `everything` set: all the user told.
    pub topic: String,
    /// The topic's content words for matching memories (lower-case; English stemmed as
    /// [`crate::Analyzer::terms`] does; Chinese words from jieba with their dictionary sub-words;
    /// stopwords and possessives like my/我的 dropped).
    pub terms: Vec<String>,
    /// Common words the user may have used when stating the fact, in the same form as `terms`
    /// and never repeating one of them: "address" also gives "live", "street", "home"; "phone
    /// number" gives "mobile", "cell"; "住址" gives "地址", "住在", "家"; "电话" gives "手机".
    pub synonyms: Vec<String>,
    /// Chinese words that name the very thing a topic term names (for "我的工资": 月薪, 薪水,
    /// 收入; for "我的住址": 住在, 家在), so a memory holding one holds the topic. Chinese states
    /// a fact with these where English repeats the noun; English synonyms stay weak ("home" is
    /// not "my home address").
    pub equivalents: Vec<String>,
    /// "everything about X", "anything about X", "all you know about X", "关于X的一切": every
    /// memory that mentions X, rather than the one fact.
    pub everything: bool,
    /// Values the request itself states and that must not be kept either: "forget that my PIN
    /// is 4412" → the range of "4412"; "忘掉我的电话13812345678" → the number. Byte ranges in
    /// the input, in order, non-overlapping.
    pub stated_values: Vec<Range<usize>>,
    /// Byte range of the request clause in the input: from where the request starts (its
    /// politeness and frame included: "OK, please forget…", "请忘掉…", "关于…都忘了吧") to the end
    /// of its sentence.
    pub span: Range<usize>,
}
