//! Semantic vs episodic type of a memory (PerLTQA's memory types), without an LLM: a logistic
//! score over cue families, in English and Chinese.
//!
//! Semantic memory says who someone is and stays true: a profile field ("Anna's Age: 30"), a
//! job, a home, a preference, a habit, a relationship ("Mia is my sister"). Episodic memory says
//! what happened once: an event with a time ("last Saturday we went…", "昨天去了…"), an
//! experience, a conversation (lines of "Name: text"). Each family of cues adds its weight once
//! (a memory is not more semantic for saying "like" three times); the sum goes through a
//! sigmoid. The weights were set by hand and checked against the labelled sentences in
//! `data/memory_types.jsonl` (EN and ZH, written for this purpose; a test holds the accuracy),
//! never fitted to evaluation data.

use mnemos_core::memory_model::QueryClass;
use mnemos_core::{ModelError, ModelResult};

/// A family of cues and its weight: positive towards semantic, negative towards episodic.
struct Family {
    weight: f64,
    /// Whole lowercase English words.
    en_words: &'static [&'static str],
    /// Lowercase English phrases, matched on word boundaries.
    en_phrases: &'static [&'static str],
    /// Chinese substrings.
    zh: &'static [&'static str],
}

/// Score of a text that shows no cue at all: slightly episodic, since most of what a chat
/// stores is something that was said or done.
const BIAS: f64 = -0.3;

#[rustfmt::skip]
const FAMILIES: &[Family] = &[
    // Identity and profile facts.
    Family {
        weight: 2.2,
        en_words: &["age", "gender", "occupation", "nationality", "nickname", "birthday", "hometown", "profession", "personality"],
        en_phrases: &["my name is", "name is", "years old", "was born", "i am a", "i'm a", "works as", "work as", "i am from", "i'm from", "is from", "lives in", "live in", "native language"],
        zh: &["我叫", "名字", "岁", "出生", "职业", "性别", "昵称", "生日", "老家", "住在", "来自", "籍贯", "性格"],
    },
    // Lasting preferences and habits.
    Family {
        weight: 1.6,
        en_words: &["favorite", "favourite", "prefer", "prefers", "allergic", "usually", "always", "never", "hobby", "hobbies", "enjoys", "loves", "hates", "vegetarian", "vegan"],
        en_phrases: &["i like", "i love", "i hate", "likes to", "is into", "is good at"],
        zh: &["喜欢", "爱好", "讨厌", "过敏", "最爱", "习惯", "经常", "总是", "从不", "擅长", "素食"],
    },
    // Relationships between people.
    Family {
        weight: 1.8,
        en_words: &["sister", "brother", "mother", "father", "wife", "husband", "son", "daughter", "cousin", "colleague", "boss", "girlfriend", "boyfriend", "relationship", "married", "friends"],
        en_phrases: &["is my", "relationship with", "are friends"],
        zh: &["姐姐", "哥哥", "弟弟", "妹妹", "妈妈", "爸爸", "母亲", "父亲", "老婆", "老公", "妻子", "丈夫", "儿子", "女儿", "同事", "上司", "男朋友", "女朋友", "关系", "是我的"],
    },
    // A time that anchors one occasion.
    Family {
        weight: -2.0,
        en_words: &["yesterday", "today", "tonight", "tomorrow", "ago", "recently", "earlier", "weekend"],
        en_phrases: &["last week", "last month", "last year", "last night", "next week", "this morning", "that day", "the other day"],
        zh: &["昨天", "今天", "今晚", "明天", "前天", "上周", "上个月", "去年", "刚才", "刚刚", "那天", "周末", "最近"],
    },
    // Something done or happening once.
    Family {
        weight: -1.6,
        en_words: &["went", "visited", "met", "saw", "attended", "bought", "happened", "took", "came", "watched", "celebrated", "traveled", "travelled", "joined", "trip", "party", "concert", "event", "during", "finished", "started"],
        en_phrases: &["we had", "i had", "had a", "decided to", "went to", "took part"],
        zh: &["去了", "参加", "见到", "遇到", "买了", "发生", "看了", "庆祝", "旅行", "聚会", "活动", "一起", "决定", "开始"],
    },
    // A conversation: what someone said or asked.
    Family {
        weight: -1.4,
        en_words: &["said", "told", "asked", "replied", "suggested", "discussed", "talked", "conversation", "mentioned"],
        en_phrases: &[],
        zh: &["说", "告诉", "问", "聊", "讨论", "建议", "对话"],
    },
];

/// P(semantic) and P(episodic) of a memory's text.
pub fn classify_memory(text: &str) -> ModelResult<QueryClass> {
    if text.trim().is_empty() {
        return Err(ModelError::InvalidInput(
            "classify_memory: the text is empty".into(),
        ));
    }
    Ok(QueryClass::from_semantic(sigmoid(score(text)) as f32))
}

/// The logit of P(semantic).
fn score(text: &str) -> f64 {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|w| w.trim_end_matches("'s").trim_matches('\''))
        .filter(|w| !w.is_empty())
        .collect();
    let padded = format!(" {} ", words.join(" "));
    let mut z = BIAS;
    for family in FAMILIES {
        let hit = family.en_words.iter().any(|w| words.contains(w))
            || family
                .en_phrases
                .iter()
                .any(|p| padded.contains(&format!(" {p} ")))
            || family.zh.iter().any(|z| text.contains(z));
        if hit {
            z += family.weight;
        }
    }
    z + dialogue_lines(text) + profile_field(text)
}

/// "Anna's Age: 30", "刘洋的昵称：阿洋": one line naming someone's attribute, then its value — the
/// shape of a profile record.
fn profile_field(text: &str) -> f64 {
    let trimmed = text.trim();
    if trimmed.lines().count() != 1 {
        return 0.0;
    }
    let Some((head, value)) = trimmed.split_once([':', '：']) else {
        return 0.0;
    };
    let possessive = head.contains("'s ") || head.contains('的');
    let short_head = head.split_whitespace().count() <= 6 && head.chars().count() <= 40;
    if possessive && short_head && !value.trim().is_empty() {
        2.5
    } else {
        0.0
    }
}

/// A text of several "Name: words" lines is a conversation, whatever it talks about.
fn dialogue_lines(text: &str) -> f64 {
    let speaker_lines = text
        .lines()
        .filter(|line| {
            line.split_once([':', '：']).is_some_and(|(name, rest)| {
                let name = name.trim();
                !name.is_empty()
                    && name.chars().count() <= 24
                    && !rest.trim().is_empty()
                    && !name.contains("'s ")
            })
        })
        .count();
    if speaker_lines >= 2 {
        -3.0
    } else {
        0.0
    }
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Labelled {
        text: String,
        memory_type: String,
    }

    #[test]
    fn the_labelled_sentences_are_classified_well_in_both_languages() {
        let data = include_str!("../data/memory_types.jsonl");
        let mut by_language = [(0usize, 0usize); 2];
        for line in data.lines().filter(|l| !l.trim().is_empty()) {
            let item: Labelled = serde_json::from_str(line).unwrap();
            let class = classify_memory(&item.text).unwrap();
            let predicted = if class.is_semantic() {
                "semantic"
            } else {
                "episodic"
            };
            let zh = item
                .text
                .chars()
                .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
            let slot = &mut by_language[usize::from(zh)];
            slot.1 += 1;
            if predicted == item.memory_type {
                slot.0 += 1;
            } else {
                eprintln!("missed ({}): {}", item.memory_type, item.text);
            }
        }
        for (right, total) in by_language {
            assert!(total >= 20, "too few labelled sentences: {total}");
            let accuracy = right as f64 / total as f64;
            assert!(accuracy >= 0.85, "accuracy {accuracy:.3} ({right}/{total})");
        }
    }

    #[test]
    fn profile_fields_are_semantic_and_dialogues_episodic() {
        assert!(classify_memory("Anna's Occupation: violin teacher")
            .unwrap()
            .is_semantic());
        let dialogue = "Anna: Did you see the match?\nBot: Yes, what a finish!\nAnna: Unreal.";
        assert!(!classify_memory(dialogue).unwrap().is_semantic());
        assert!(classify_memory("   ").is_err());
        // A profile record is semantic even when its value reads like an event.
        assert!(
            classify_memory("Anna's Achievements: won the city marathon in 2021")
                .unwrap()
                .is_semantic()
        );
    }
}
