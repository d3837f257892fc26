//! Semantic vs episodic query classifier (PerLTQA's memory types): logistic regression over the
//! query embedding concatenated with a few lexical cues, in English and Chinese.
//!
//! Semantic questions ask for facts about people (name, age, job, who is whose sister);
//! episodic questions ask about events and conversations (what happened, what did X say, how
//! did they feel) — and, as in PerLTQA, questions about things rather than people (a product,
//! a place, a film, a piece of advice) are episodic too: such facts live in the conversations
//! and events where they came up, not in anyone's profile. The weights are trained (by the
//! `mnemos-train` crate, behind `mnemos train classifier`) on the labelled question set
//! `data/query_types.jsonl` and shipped per embedder (the embedding half only makes sense in
//! the vector space it was trained in); for an embedder without trained weights a lexical-only
//! model is used and [`QueryClassifier::degradation`] says so.
//!
//! This module holds what classifying needs: the features, the weights file format and the
//! shipped weights. Fitting them lives in `mnemos-train`.

use mnemos_core::memory_model::QueryClass;
use mnemos_core::{EmbedderExt, ModelError, ModelResult};
use serde::{Deserialize, Serialize};

use crate::Ctx;

/// Version of the weights file layout (and of the lexical feature definitions).
pub const WEIGHTS_FORMAT: u32 = 1;

/// `embedder_id` of a model that uses no embedding.
pub const LEXICAL_ONLY_ID: &str = "lexical";

/// Shipped weights, by embedder id.
const SHIPPED_WEIGHTS: [(&str, &str); 6] = [
    (
        "minilm-l6-v2",
        include_str!("../data/classifier-minilm-l6-v2.json"),
    ),
    (
        "e5-small-q4",
        include_str!("../data/classifier-e5-small-q4.json"),
    ),
    (
        "bilingual:minilm-l6-v2+e5-small-q4",
        include_str!("../data/classifier-bilingual-minilm-e5.json"),
    ),
    (
        "bilingual:minilm-l6-v2+m3e-small",
        include_str!("../data/classifier-bilingual-minilm-m3e.json"),
    ),
    (
        "hash-v1-384",
        include_str!("../data/classifier-hash-v1-384.json"),
    ),
    (
        LEXICAL_ONLY_ID,
        include_str!("../data/classifier-lexical.json"),
    ),
];

/// The shipped weights file for `embedder_id` (or [`LEXICAL_ONLY_ID`]), if one exists.
pub fn shipped_weights_json(embedder_id: &str) -> Option<&'static str> {
    SHIPPED_WEIGHTS
        .iter()
        .find(|(id, _)| *id == embedder_id)
        .map(|(_, json)| *json)
}

/// The embedder ids with shipped weights (without the lexical-only model).
pub fn shipped_embedder_ids() -> impl Iterator<Item = &'static str> {
    SHIPPED_WEIGHTS
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| *id != LEXICAL_ONLY_ID)
}

// ---------------------------------------------------------------------------------------------
// Lexical features

/// A family of cue words. English entries match whole lowercase words (`en_words`) or
/// word-bounded phrases (`en_phrases`); Chinese entries match as substrings (no reliance on
/// segmentation, which varies with the dictionary).
struct Cue {
    name: &'static str,
    en_words: &'static [&'static str],
    en_phrases: &'static [&'static str],
    zh: &'static [&'static str],
}

#[rustfmt::skip]
const CUES: &[Cue] = &[
    Cue {
        name: "wh_who",
        en_words: &["who", "whom", "whose"],
        en_phrases: &[],
        zh: &["谁"],
    },
    Cue {
        name: "wh_what",
        en_words: &["what", "which"],
        en_phrases: &[],
        zh: &[
            "什么", "哪个", "哪些", "哪家", "哪所", "哪种", "哪首", "哪条", "哪一",
        ],
    },
    Cue {
        name: "wh_when",
        en_words: &["when"],
        en_phrases: &["what time", "what date", "how long ago"],
        zh: &["什么时候", "何时", "哪天", "几点", "多久"],
    },
    Cue {
        name: "wh_where",
        en_words: &["where"],
        en_phrases: &[],
        zh: &["哪里", "哪儿", "在哪", "去哪"],
    },
    Cue {
        name: "wh_how",
        en_words: &["how"],
        en_phrases: &[],
        zh: &["怎么", "如何", "怎样"],
    },
    Cue {
        name: "wh_why",
        en_words: &["why"],
        en_phrases: &[],
        zh: &["为什么", "为何", "为啥"],
    },
    Cue {
        name: "past_verb",
        en_words: &[
            "did", "didn't", "went", "said", "told", "met", "saw", "took", "made", "had", "was",
            "were", "bought", "felt", "ate", "came", "gave", "got", "left", "found", "thought",
            "brought", "began", "spent", "won", "lost", "chose", "drove", "flew", "ran",
            "wrote", "sent", "kept", "heard", "taught", "caught", "forgot", "became", "broke",
            "sang", "swam", "fell", "held", "led", "paid", "sold", "stood", "woke", "wore",
            "built", "knew", "threw", "hid", "rode", "shook", "spoke", "stole", "understood",
        ],
        en_phrases: &[],
        zh: &["了", "过的", "过什么"],
    },
    Cue {
        name: "conversation",
        en_words: &[
            "say", "says", "said", "tell", "tells", "told", "talk", "talked", "talks",
            "discuss", "discussed", "discussion", "mention", "mentioned", "ask", "asked",
            "reply", "replied", "answer", "answered", "suggest", "suggested", "suggestion",
            "chat", "chatted", "conversation", "promise", "promised", "explain", "explained",
            "advise", "advised", "advice", "recommend", "recommended", "agree", "agreed",
            "argue", "argued", "announce", "announced", "share", "shared", "respond",
            "responded", "call", "called", "phone", "text", "texted", "apologize", "apologized",
        ],
        en_phrases: &[],
        zh: &[
            "说", "聊", "谈", "讨论", "提到", "告诉", "问", "回答", "建议", "对话", "答应", "解释",
            "推荐", "同意", "宣布", "分享", "电话", "商量", "道歉", "吵架", "争吵",
        ],
    },
    Cue {
        name: "temporal",
        en_words: &[
            "yesterday", "today", "tonight", "tomorrow", "last", "ago", "during", "after",
            "before", "then", "morning", "afternoon", "evening", "night", "weekend", "week",
            "month", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
            "sunday", "january", "february", "march", "april", "may", "june", "july", "august",
            "september", "october", "november", "december", "spring", "summer", "autumn",
            "winter", "recently", "first", "while", "once", "eve",
        ],
        en_phrases: &["that day", "that time"],
        zh: &[
            "昨天", "前天", "今天", "明天", "上周", "下周", "上个月", "下个月", "去年", "明年", "那天", "当时", "之后",
            "以后", "之前", "期间", "周末", "早上", "上午", "下午", "晚上", "昨晚", "暑假", "寒假", "春节", "除夕", "第一次",
            "星期", "周一", "周二", "周三", "周四", "周五", "周六", "周日", "那次", "时候",
        ],
    },
    Cue {
        name: "event_noun",
        en_words: &[
            "trip", "journey", "vacation", "holiday", "holidays", "party", "meeting", "event",
            "concert", "wedding", "ceremony", "game", "match", "competition", "tournament",
            "exam", "interview", "visit", "dinner", "lunch", "breakfast", "picnic", "festival",
            "celebration", "conference", "workshop", "rehearsal", "presentation", "speech",
            "hike", "hiking", "accident", "reunion", "fight", "argument", "quarrel", "news",
            "experiment", "exhibition", "flight", "show", "date", "outing", "tour", "ride",
        ],
        en_phrases: &[],
        zh: &[
            "旅行", "旅游", "聚会", "派对", "会议", "会上", "活动", "比赛", "婚礼", "典礼", "演唱会", "音乐会", "假期",
            "面试", "考试", "晚饭", "晚餐", "午饭", "野餐", "节日", "庆祝", "展览", "航班", "消息", "实验", "汇报", "演讲",
            "约会", "事故", "团圆", "徒步", "爬山", "出游", "春游", "派对", "发生",
        ],
    },
    Cue {
        name: "emotion",
        en_words: &[
            "feel", "felt", "feeling", "feelings", "emotion", "emotions", "react", "reacted",
            "reaction", "happy", "sad", "excited", "upset", "nervous", "worried", "angry",
            "surprised", "disappointed", "relieved", "mood", "enjoyed", "cry", "cried",
        ],
        en_phrases: &[],
        zh: &[
            "感觉", "感受", "心情", "情绪", "反应", "开心", "高兴", "激动", "紧张", "难过", "伤心",
            "担心", "生气", "惊讶", "失望", "哭",
        ],
    },
    Cue {
        name: "plan",
        en_words: &[
            "plan", "plans", "planning", "planned", "going", "will", "intend", "intends", "want",
            "wants", "hope", "hopes", "next", "upcoming", "yet", "still", "decide", "decided",
            "decision",
        ],
        en_phrases: &[],
        zh: &[
            "打算", "计划", "准备", "要去", "将要", "想要", "还在", "决定",
        ],
    },
    Cue {
        name: "profile",
        en_words: &[
            "name", "named", "full", "surname", "nickname", "age", "old", "birthday", "born",
            "birth", "gender", "male", "female", "job", "occupation", "profession",
            "professional", "title", "career", "living", "company", "position", "department",
            "nationality", "country", "hometown", "height", "tall", "weight", "weigh",
            "appearance", "look", "looks", "hair", "eyes", "personality", "character", "hobby",
            "hobbies", "interests", "favorite", "favourite", "like", "likes", "prefer",
            "education", "educational", "degree", "university", "school", "major", "graduate",
            "graduated", "language", "languages", "speak", "religion", "married", "marital",
            "single", "address", "live", "lives", "based", "skill", "skills", "good", "known",
            "specialize", "specializes", "strengths", "values", "pets", "health", "blood",
            "sign", "routine", "experience", "awards", "profile", "field", "goals", "dream",
            "admire", "admires", "idol", "achievements", "accomplishment", "accomplishments",
            "honors", "certifications", "employer", "employs", "employed",
        ],
        en_phrases: &[
            "for a living", "grow up", "grew up", "free time", "role model", "look up to",
        ],
        zh: &[
            "名字", "姓名", "叫什么", "全名", "昵称", "外号", "称呼", "年龄", "多大", "岁", "生日", "出生", "性别", "男生",
            "女生", "男性", "女性", "职业", "工作", "职位", "职务", "职称", "单位", "部门", "国籍", "哪国", "哪里人", "家乡",
            "籍贯", "身高", "体重", "外貌", "长相", "长什么样", "头发", "性格", "为人", "什么样的人", "爱好", "兴趣", "喜欢",
            "学历", "毕业", "专业", "大学", "语言", "母语", "宗教", "婚姻", "结婚", "住在", "住址", "技能", "擅长", "专长",
            "宠物", "健康", "血型", "星座", "作息", "经验", "奖项", "价值观", "目标", "梦想", "基本情况", "介绍", "榜样",
            "敬佩", "崇拜", "偶像", "成就", "荣誉", "证书", "雇主",
        ],
    },
    Cue {
        name: "relation",
        en_words: &[
            "sister", "sisters", "brother", "brothers", "sibling", "siblings", "mother",
            "father", "mom", "dad", "parent", "parents", "son", "daughter", "children", "kids",
            "child", "wife", "husband", "spouse", "partner", "fiance", "fiancé", "fiancée",
            "friend", "friends", "friendship", "colleague", "colleagues", "coworker", "boss",
            "manager", "supervisor", "mentor", "mentors", "teacher", "tutor", "student",
            "classmate", "roommate", "neighbor", "neighbour", "cousin", "uncle", "aunt",
            "nephew", "niece", "grandmother", "grandfather", "grandma", "grandpa",
            "grandparents", "relative", "relatives", "relationship", "related", "connected",
            "connection", "acquainted", "family", "girlfriend", "boyfriend", "teammate",
            "confidant", "rival", "godfather", "godmother", "stepmother", "stepfather", "twin",
            "twins", "ex", "law",
        ],
        en_phrases: &[
            "know each other", "in common", "in relation to", "relationship with",
        ],
        zh: &[
            "姐姐", "妹妹", "哥哥", "弟弟", "姐妹", "兄弟", "母亲", "妈妈", "父亲", "爸爸", "父母", "儿子", "女儿", "孩子",
            "妻子", "老婆", "丈夫", "老公", "朋友", "闺蜜", "发小", "同事", "上司", "老板", "领导", "导师", "老师", "学生",
            "同学", "室友", "邻居", "表姐", "表妹", "表哥", "表弟", "叔叔", "阿姨", "舅舅", "姑姑", "奶奶", "爷爷", "外婆",
            "外公", "姥姥", "亲戚", "关系", "认识", "家人", "恋人", "队友", "合伙人", "对手", "教父", "继父", "继母", "前妻",
            "前夫", "姐夫", "嫂子", "未婚", "双胞胎", "助理", "什么人",
        ],
    },
    Cue {
        name: "habitual",
        en_words: &[
            "usually", "often", "always", "generally", "typically", "normally", "regularly",
            "tend", "tends", "habit", "habits", "every", "daily", "ever", "since",
        ],
        en_phrases: &["how often", "each other"],
        zh: &[
            "通常", "经常", "常常", "总是", "一般", "平时", "习惯", "每天", "每周", "多久一次", "多少年",
        ],
    },
    Cue {
        name: "copula_present",
        en_words: &["is", "are", "am", "does", "do"],
        en_phrases: &[],
        zh: &["是", "有没有", "有哪些", "有什么", "有几"],
    },
];

/// Words ending in "ed" that are not past-tense event verbs in these questions.
#[rustfmt::skip]
const NOT_PAST_ED: &[&str] = &[
    "need", "red", "bed", "named", "married", "related", "connected", "interested", "based",
    "aged", "skilled", "talented", "retired", "acquainted", "educated", "called", "used",
];

/// Words ending in "ing" that are not progressive verbs.
#[rustfmt::skip]
const NOT_PROGRESSIVE: &[&str] = &[
    "thing", "things", "something", "anything", "everything", "nothing", "morning", "evening",
    "during", "king", "sing", "spring", "ring", "wedding", "building", "meeting", "living",
    "feeling", "feelings", "sibling", "siblings", "engineering", "nursing", "clothing",
];

/// Names of the computed (non-cue) lexical features, after the cue features.
const COMPUTED_FEATURES: [&str; 7] = [
    "past_ed",
    "progressive_ing",
    "possessive",
    "starts_past_aux",
    "starts_present_aux",
    "log_length",
    "chinese",
];

/// Cue counts are capped: a cue family says "present, maybe strongly", not "how long".
const CUE_COUNT_CAP: f64 = 3.0;

/// Names of the lexical features, in row order (after the embedding).
pub fn lexical_feature_names() -> Vec<&'static str> {
    CUES.iter()
        .map(|c| c.name)
        .chain(COMPUTED_FEATURES.iter().copied())
        .collect()
}

/// Number of lexical features.
pub fn lexical_feature_count() -> usize {
    CUES.len() + COMPUTED_FEATURES.len()
}

fn english_words(lower: &str) -> Vec<&str> {
    lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’') || mnemos_text::is_cjk(c))
        .map(|w| w.trim_matches(|c| c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Strip an English possessive ("anna's" → "anna").
fn strip_possessive(word: &str) -> (&str, bool) {
    for suffix in ["'s", "’s"] {
        if let Some(stem) = word.strip_suffix(suffix) {
            return (stem, true);
        }
    }
    (word, false)
}

fn count_phrase(padded: &str, phrase: &str) -> usize {
    padded.matches(&format!(" {phrase} ")).count()
}

/// The lexical features of `text`, unscaled, in the order of [`lexical_feature_names`].
pub fn lexical_features(text: &str) -> Vec<f64> {
    let lower = text.to_lowercase();
    let raw_words = english_words(&lower);
    let mut possessives = 0usize;
    let words: Vec<&str> = raw_words
        .iter()
        .map(|w| {
            let (stem, possessive) = strip_possessive(w);
            possessives += usize::from(possessive);
            stem
        })
        .collect();
    // Phrases match on single-spaced words so punctuation does not hide them.
    let padded = format!(" {} ", words.join(" "));

    let mut row = Vec::with_capacity(lexical_feature_count());
    for cue in CUES {
        let mut count = words.iter().filter(|w| cue.en_words.contains(w)).count();
        count += cue
            .en_phrases
            .iter()
            .map(|p| count_phrase(&padded, p))
            .sum::<usize>();
        count += cue
            .zh
            .iter()
            .map(|z| lower.matches(z).count())
            .sum::<usize>();
        // Years ("in 2019") are temporal cues too.
        if cue.name == "temporal" {
            count += words
                .iter()
                .filter(|w| w.len() == 4 && (w.starts_with("19") || w.starts_with("20")))
                .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
                .count();
        }
        row.push((count as f64).min(CUE_COUNT_CAP));
    }

    let past_ed = words
        .iter()
        .filter(|w| w.len() > 4 && w.ends_with("ed") && !NOT_PAST_ED.contains(w))
        .count();
    let progressive = words
        .iter()
        .filter(|w| w.len() > 5 && w.ends_with("ing") && !NOT_PROGRESSIVE.contains(w))
        .count();
    let first = words.first().copied().unwrap_or("");
    let starts_past = ["did", "was", "were", "had", "has", "have"].contains(&first);
    let starts_present = ["is", "are", "does", "do", "can", "could"].contains(&first);
    let cjk_chars = lower.chars().filter(|c| mnemos_text::is_cjk(*c)).count();
    let latin_words = words
        .iter()
        .filter(|w| !w.chars().any(mnemos_text::is_cjk))
        .count();
    // A Chinese character carries about half an English word.
    let length = latin_words as f64 + cjk_chars as f64 / 2.0;

    row.push((past_ed as f64).min(CUE_COUNT_CAP));
    row.push((progressive as f64).min(CUE_COUNT_CAP));
    row.push((possessives as f64).min(CUE_COUNT_CAP));
    row.push(f64::from(u8::from(starts_past)));
    row.push(f64::from(u8::from(starts_present)));
    row.push((1.0 + length).ln());
    row.push(f64::from(u8::from(cjk_chars > 0)));
    row
}

/// The full feature row: the embedding (if the model uses one) followed by the lexical features.
pub fn feature_row(embedding: Option<&[f32]>, text: &str) -> Vec<f64> {
    let mut row: Vec<f64> = embedding
        .unwrap_or(&[])
        .iter()
        .map(|v| f64::from(*v))
        .collect();
    row.extend(lexical_features(text));
    row
}

// ---------------------------------------------------------------------------------------------
// Logistic model

/// How weights were trained (recorded in the weights file): the settings of the trainer's
/// logistic regression, with the defaults it uses unless told otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainOptions {
    /// L2 penalty on the (standardized) lexical weights; the bias is not penalized.
    pub l2: f64,
    /// L2 penalty on the embedding weights (default: `l2`). Hundreds of embedding dimensions
    /// against a few hundred questions overfit easily; a separate penalty lets them be
    /// shrunk harder than the few lexical cues.
    #[serde(default)]
    pub embedding_l2: Option<f64>,
    /// L-BFGS iterations at most.
    pub max_iterations: usize,
    /// Stop when the gradient's max-norm falls below this.
    pub tolerance: f64,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            l2: 0.01,
            embedding_l2: None,
            max_iterations: 500,
            tolerance: 1e-7,
        }
    }
}

/// A trained logistic model over standardized features: P(semantic) = σ(b + w·(x − μ)/σ).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogisticModel {
    pub weights: Vec<f64>,
    pub bias: f64,
    pub means: Vec<f64>,
    pub stds: Vec<f64>,
}

/// The logistic function, stable for large |z|.
pub fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

impl LogisticModel {
    /// P(positive class) of an unscaled feature row. Rows of the wrong width are an error.
    pub fn probability(&self, row: &[f64]) -> ModelResult<f64> {
        if row.len() != self.weights.len() {
            return Err(ModelError::invalid(format!(
                "query classifier: feature row has {} values, the model expects {}",
                row.len(),
                self.weights.len()
            )));
        }
        let z = self.bias
            + row
                .iter()
                .zip(&self.weights)
                .zip(self.means.iter().zip(&self.stds))
                .map(|((x, w), (m, s))| w * (x - m) / s)
                .sum::<f64>();
        Ok(sigmoid(z))
    }

    /// Same widths everywhere, finite parameters, positive scales.
    pub fn validate(&self) -> ModelResult<()> {
        let n = self.weights.len();
        if self.means.len() != n || self.stds.len() != n {
            return Err(ModelError::invalid(format!(
                "query classifier: {n} weights but {} means and {} stds",
                self.means.len(),
                self.stds.len()
            )));
        }
        let finite = self
            .weights
            .iter()
            .chain(&self.means)
            .chain(&self.stds)
            .chain(std::iter::once(&self.bias))
            .all(|v| v.is_finite());
        if !finite {
            return Err(ModelError::invalid(
                "query classifier: non-finite parameter",
            ));
        }
        if self.stds.iter().any(|s| *s <= 0.0) {
            return Err(ModelError::invalid(
                "query classifier: a feature std is not positive",
            ));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Weights files

/// Where a weights file came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingProvenance {
    pub examples: usize,
    /// Checksum of the question set (FNV-1a 64 of its bytes).
    pub checksum: String,
    pub options: TrainOptions,
    pub train_accuracy: f64,
    pub cv_folds: usize,
    pub cv_accuracy: f64,
}

/// A weights file: the model, what it expects as input and how it was trained. The positive
/// class is semantic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassifierWeights {
    pub format: u32,
    /// Embedder whose vectors the model was trained on, or [`LEXICAL_ONLY_ID`].
    pub embedder_id: String,
    /// Embedding width (0 for lexical-only); the lexical features follow the embedding.
    pub embedding_dim: usize,
    pub lexical_features: Vec<String>,
    pub model: LogisticModel,
    pub training: TrainingProvenance,
}

impl ClassifierWeights {
    pub fn uses_embedding(&self) -> bool {
        self.embedding_dim > 0
    }

    /// Parse and check a weights file.
    pub fn from_json(json: &str) -> ModelResult<Self> {
        let weights: ClassifierWeights = serde_json::from_str(json)
            .map_err(|e| ModelError::invalid(format!("query classifier weights: {e}")))?;
        weights.validate()?;
        Ok(weights)
    }

    pub fn to_json(&self) -> ModelResult<String> {
        serde_json::to_string_pretty(self)
            .map_err(|e| ModelError::invalid(format!("query classifier weights: {e}")))
    }

    /// The file must match this build's feature layout.
    pub fn validate(&self) -> ModelResult<()> {
        if self.format != WEIGHTS_FORMAT {
            return Err(ModelError::invalid(format!(
                "query classifier weights: format {} (this build reads {WEIGHTS_FORMAT})",
                self.format
            )));
        }
        let names = lexical_feature_names();
        if self.lexical_features != names {
            return Err(ModelError::invalid(
                "query classifier weights: lexical features differ from this build's",
            ));
        }
        if (self.embedding_dim == 0) != (self.embedder_id == LEXICAL_ONLY_ID) {
            return Err(ModelError::invalid(format!(
                "query classifier weights: embedder '{}' with embedding width {}",
                self.embedder_id, self.embedding_dim
            )));
        }
        if self.model.weights.len() != self.embedding_dim + names.len() {
            return Err(ModelError::invalid(format!(
                "query classifier weights: {} weights for {} features",
                self.model.weights.len(),
                self.embedding_dim + names.len()
            )));
        }
        self.model.validate()
    }
}

// ---------------------------------------------------------------------------------------------
// The classifier

/// The trained query-type classifier.
pub struct QueryClassifier {
    /// `None` only if even the lexical weights could not be loaded; then classify fails.
    weights: Option<ClassifierWeights>,
    degradation: Option<String>,
}

impl QueryClassifier {
    /// The shipped classifier for `embedder_id`; the lexical-only one (with a degradation
    /// notice) when none was trained for it.
    pub fn for_embedder(embedder_id: &str) -> Self {
        if let Some(json) =
            shipped_weights_json(embedder_id).filter(|_| embedder_id != LEXICAL_ONLY_ID)
        {
            match ClassifierWeights::from_json(json) {
                Ok(weights) => return Self::from_weights(weights),
                Err(err) => {
                    return Self::lexical_fallback(format!(
                        "the query classifier weights for embedder '{embedder_id}' do not load \
                         ({err}); classifying queries from lexical cues only (less accurate)"
                    ))
                }
            }
        }
        Self::lexical_fallback(format!(
            "no query classifier was trained for embedder '{embedder_id}'; classifying queries \
             from lexical cues only (less accurate)"
        ))
    }

    /// The shipped lexical-only classifier, with `reason` as its degradation notice.
    fn lexical_fallback(reason: String) -> Self {
        let loaded = shipped_weights_json(LEXICAL_ONLY_ID)
            .ok_or_else(|| ModelError::invalid("no lexical weights shipped"))
            .and_then(ClassifierWeights::from_json);
        match loaded {
            Ok(weights) => QueryClassifier {
                weights: Some(weights),
                degradation: Some(reason),
            },
            Err(err) => QueryClassifier {
                weights: None,
                degradation: Some(format!(
                    "{reason}; but the lexical weights do not load either ({err}), so queries \
                     cannot be classified"
                )),
            },
        }
    }

    /// A classifier over given weights (e.g. just trained). A lexical-only model reports a
    /// degradation.
    pub fn from_weights(weights: ClassifierWeights) -> Self {
        let degradation = (!weights.uses_embedding()).then(|| {
            "the query classifier uses lexical cues only, without embedding features (less \
             accurate)"
                .to_string()
        });
        QueryClassifier {
            weights: Some(weights),
            degradation,
        }
    }

    pub fn weights(&self) -> Option<&ClassifierWeights> {
        self.weights.as_ref()
    }

    pub fn degradation(&self) -> Option<String> {
        self.degradation.clone()
    }

    pub fn classify(&self, ctx: &Ctx, query: &str) -> ModelResult<QueryClass> {
        let weights = self.weights.as_ref().ok_or_else(|| {
            ModelError::Unavailable(
                self.degradation
                    .clone()
                    .unwrap_or_else(|| "query classifier has no weights".to_string()),
            )
        })?;
        let row = if weights.uses_embedding() {
            if ctx.embedder.id() != weights.embedder_id {
                return Err(ModelError::Unavailable(format!(
                    "classify_query: the classifier was trained on embedder '{}' but the \
                     engine embeds with '{}'",
                    weights.embedder_id,
                    ctx.embedder.id()
                )));
            }
            let vector = ctx.embedder.embed_query(query).map_err(|e| {
                ModelError::Unavailable(format!("classify_query: cannot embed the query: {e}"))
            })?;
            if vector.len() != weights.embedding_dim {
                return Err(ModelError::bad_output(
                    "classify_query",
                    format!(
                        "embedding has {} dimensions, the classifier expects {}",
                        vector.len(),
                        weights.embedding_dim
                    ),
                ));
            }
            feature_row(Some(&vector), query)
        } else {
            feature_row(None, query)
        };
        let p_semantic = weights.model.probability(&row)?;
        Ok(QueryClass::from_semantic(p_semantic as f32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemos_core::Embedder;
    use mnemos_embed::HashEmbedder;
    use mnemos_text::Analyzer;

    fn hash_embedder() -> HashEmbedder {
        HashEmbedder::new(mnemos_embed::DEFAULT_HASH_DIM).unwrap()
    }

    fn ctx(embedder: &dyn Embedder) -> Ctx<'_> {
        Ctx {
            analyzer: Analyzer::shared(),
            embedder,
        }
    }

    #[test]
    fn probabilities_are_complementary_and_bounded() {
        let classifier = QueryClassifier::for_embedder("hash-v1-384");
        let embedder = hash_embedder();
        for query in [
            "What is Anna's job?",
            "她昨天说了什么？",
            "",
            "🙂🙂🙂",
            &"why ".repeat(5000),
            "\u{200b}\u{0301}",
        ] {
            let class = classifier.classify(&ctx(&embedder), query).unwrap();
            assert!((0.0..=1.0).contains(&class.semantic), "{query}");
            assert!((class.semantic + class.episodic - 1.0).abs() < 1e-6);
        }
    }

    #[test]
    fn unknown_embedder_falls_back_to_lexical_and_says_so() {
        let classifier = QueryClassifier::for_embedder("some-other-embedder");
        let notice = classifier.degradation().unwrap();
        assert!(notice.contains("some-other-embedder") && notice.contains("lexical"));
        assert_eq!(classifier.weights().unwrap().embedder_id, LEXICAL_ONLY_ID);
        // It still classifies, with any embedder.
        let embedder = hash_embedder();
        let class = classifier
            .classify(&ctx(&embedder), "Who is Tom's sister?")
            .unwrap();
        assert!(class.is_semantic());
    }

    #[test]
    fn shipped_weights_load_for_each_embedder() {
        for (id, dim) in [
            ("minilm-l6-v2", 384),
            ("bilingual:minilm-l6-v2+m3e-small", 384 + 512),
            ("e5-small-q4", 384),
            ("bilingual:minilm-l6-v2+e5-small-q4", 384 + 384),
            ("hash-v1-384", 384),
        ] {
            let classifier = QueryClassifier::for_embedder(id);
            assert_eq!(classifier.degradation(), None, "{id}");
            let weights = classifier.weights().unwrap();
            assert_eq!(weights.embedder_id, id);
            assert_eq!(weights.embedding_dim, dim);
        }
        assert_eq!(shipped_embedder_ids().count(), 5);
        let lexical =
            ClassifierWeights::from_json(shipped_weights_json(LEXICAL_ONLY_ID).unwrap()).unwrap();
        assert!(!lexical.uses_embedding());
    }

    #[test]
    fn hash_weights_classify_sample_queries_sensibly() {
        let classifier = QueryClassifier::for_embedder("hash-v1-384");
        let embedder = hash_embedder();
        let semantic = [
            "How old is Margaret Lee?",
            "Who is Peter's younger brother?",
            "What does Rachel do for work?",
            "What is the relationship between Olga and Ivan?",
            "韩梅梅今年多大？",
            "李雷的哥哥是谁？",
            "小王是做什么工作的？",
        ];
        let episodic = [
            "What did Margaret say to her neighbor yesterday?",
            "Where did Peter and his brother go last summer?",
            "How did Rachel feel after the interview?",
            "韩梅梅昨天在聚会上说了什么？",
            "李雷上周末去了哪里？",
            "小王面试之后心情怎么样？",
        ];
        for query in semantic {
            let class = classifier.classify(&ctx(&embedder), query).unwrap();
            assert!(class.is_semantic(), "{query}: {class:?}");
        }
        for query in episodic {
            let class = classifier.classify(&ctx(&embedder), query).unwrap();
            assert!(!class.is_semantic(), "{query}: {class:?}");
        }
    }

    #[test]
    fn mismatched_embedder_is_an_error_not_a_guess() {
        let classifier = QueryClassifier::for_embedder("minilm-l6-v2");
        let embedder = hash_embedder();
        let err = classifier
            .classify(&ctx(&embedder), "Who is Tom?")
            .unwrap_err();
        assert!(matches!(err, ModelError::Unavailable(_)));
    }

    #[test]
    fn lexical_cues_fire_in_both_languages() {
        let names = lexical_feature_names();
        let value = |text: &str, name: &str| {
            let i = names.iter().position(|n| *n == name).unwrap();
            lexical_features(text)[i]
        };
        assert_eq!(value("Who is Anna's sister?", "relation"), 1.0);
        assert_eq!(value("Who is Anna's sister?", "possessive"), 1.0);
        assert_eq!(value("安娜的妹妹是谁？", "relation"), 1.0);
        assert_eq!(value("安娜的妹妹是谁？", "wh_who"), 1.0);
        assert_eq!(
            value("What did they discuss yesterday?", "conversation"),
            1.0
        );
        assert_eq!(value("他们昨天聊了什么？", "temporal"), 1.0);
        assert_eq!(value("They visited Rome and walked a lot", "past_ed"), 2.0);
        assert_eq!(value("Did she go?", "starts_past_aux"), 1.0);
        assert_eq!(value("她多大？", "chinese"), 1.0);
        assert_eq!(value("What happened in 2019?", "temporal"), 1.0);
        assert_eq!(lexical_features("").len(), lexical_feature_count());
    }
}
