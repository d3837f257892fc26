//! The word lists the persona rules look words up in (English lower case, Chinese as written),
//! read from `lexicon/persona_en.txt` and `lexicon/persona_zh.txt` (format: [`crate::wordlist`])
//! once, on first use.

use std::sync::LazyLock;

use crate::wordlist::{WordListError, WordLists};

const PERSONA_EN: &str = include_str!("../lexicon/persona_en.txt");
const PERSONA_ZH: &str = include_str!("../lexicon/persona_zh.txt");

/// Both languages' lists.
pub(super) struct PersonaLexicon {
    pub(super) en: EnglishWords,
    pub(super) zh: ChineseWords,
}

impl PersonaLexicon {
    /// The lists compiled into the binary, parsed on first use. An error here is a defect of
    /// the data files (the unit tests parse them), reported rather than papered over.
    pub(super) fn shared() -> Result<&'static PersonaLexicon, WordListError> {
        static SHARED: LazyLock<Result<PersonaLexicon, WordListError>> =
            LazyLock::new(|| PersonaLexicon::parse(PERSONA_EN, PERSONA_ZH));
        SHARED.as_ref().map_err(Clone::clone)
    }

    fn parse(en: &'static str, zh: &'static str) -> Result<Self, WordListError> {
        Ok(PersonaLexicon {
            en: EnglishWords::parse(WordLists::parse("persona_en.txt", en)?)?,
            zh: ChineseWords::parse(WordLists::parse("persona_zh.txt", zh)?)?,
        })
    }
}

/// English lists (lower case).
pub(super) struct EnglishWords {
    /// English occupation nouns (the head of "I'm a … nurse"), plus a suffix test for the rest.
    pub(super) jobs: Vec<&'static str>,
    /// Words ending in a job suffix that are not jobs.
    pub(super) not_jobs: Vec<&'static str>,
    /// Gender words ("I'm a woman", "as a trans man").
    pub(super) gender: Vec<&'static str>,
    /// Character traits (adjectives). States such as "tired" or "happy" are left out on purpose.
    pub(super) traits: Vec<&'static str>,
    /// Trait nouns ("I'm an introvert").
    pub(super) trait_nouns: Vec<&'static str>,
    /// Diets and rhythms that read as habits ("I'm a vegetarian", "I'm a night owl").
    pub(super) habit_nouns: Vec<&'static str>,
    /// Family members (the word after "my").
    pub(super) family: Vec<&'static str>,
    /// Partners, friends and colleagues (the word after "my").
    pub(super) relations: Vec<&'static str>,
    /// Marital and dating states ("I'm married", "I'm single").
    pub(super) relation_states: Vec<&'static str>,
    /// Animals people keep.
    pub(super) pets: Vec<&'static str>,
    /// Verbs whose "to"-infinitive is talk about the conversation, not a plan ("I want to say").
    pub(super) speech_verbs: Vec<&'static str>,
    /// Words that end a value ("I love hiking because …" → "hiking").
    pub(super) cut_words: Vec<&'static str>,
    /// Words that end a value when they start a new clause with a subject ("… and I went").
    pub(super) subjects: Vec<&'static str>,
    /// Trailing words dropped from a value ("I live in Boston now" → "Boston").
    pub(super) trailing: Vec<&'static str>,
    /// Pairs that end a value ("so much", "a lot", "right now").
    pub(super) cut_pairs: Vec<(&'static str, &'static str)>,
    /// Words skipped between the parts of a pattern ("I really love", "I'm currently living").
    pub(super) fillers: Vec<&'static str>,
    /// Words before "I" that make the clause hypothetical or reported, not a statement.
    pub(super) hypothetical: Vec<&'static str>,
    /// Frequency words that mark a habit.
    pub(super) frequency: Vec<&'static str>,
    /// Periods after "every"/"each" that mark a habit.
    pub(super) periods: Vec<&'static str>,
    /// Verbs after a frequency word that are feelings, not routines ("I always love …").
    pub(super) not_routine: Vec<&'static str>,
    /// Value starts that point at the listener or at the situation, not at a preference.
    pub(super) deictic: Vec<&'static str>,
    /// Words in front of a job noun that say nothing about the job.
    pub(super) job_noise: Vec<&'static str>,
    /// Nationalities and faiths: capitalized after "I'm" but not names.
    pub(super) not_names: Vec<&'static str>,
    /// Size words dropped from "I'm a huge X fan".
    pub(super) fan_sizes: Vec<&'static str>,
    /// Words that may stand between "I have" and the head noun ("a dog", "two kids").
    pub(super) possession_modifiers: Vec<&'static str>,
    /// Words skipped between "my" and a family member, relation or pet ("my little sister").
    pub(super) kin_modifiers: Vec<&'static str>,
}

impl EnglishWords {
    fn parse(mut lists: WordLists) -> Result<Self, WordListError> {
        let words = EnglishWords {
            jobs: lists.words("jobs")?,
            not_jobs: lists.words("not_jobs")?,
            gender: lists.words("gender")?,
            traits: lists.words("traits")?,
            trait_nouns: lists.words("trait_nouns")?,
            habit_nouns: lists.words("habit_nouns")?,
            family: lists.words("family")?,
            relations: lists.words("relations")?,
            relation_states: lists.words("relation_states")?,
            pets: lists.words("pets")?,
            speech_verbs: lists.words("speech_verbs")?,
            cut_words: lists.words("cut_words")?,
            subjects: lists.words("subjects")?,
            trailing: lists.words("trailing")?,
            cut_pairs: lists.pairs("cut_pairs")?,
            fillers: lists.words("fillers")?,
            hypothetical: lists.words("hypothetical")?,
            frequency: lists.words("frequency")?,
            periods: lists.words("periods")?,
            not_routine: lists.words("not_routine")?,
            deictic: lists.words("deictic")?,
            job_noise: lists.words("job_noise")?,
            not_names: lists.words("not_names")?,
            fan_sizes: lists.words("fan_sizes")?,
            possession_modifiers: lists.words("possession_modifiers")?,
            kin_modifiers: lists.words("kin_modifiers")?,
        };
        lists.finish()?;
        Ok(words)
    }
}

/// Chinese lists (as written).
pub(super) struct ChineseWords {
    /// Chinese occupations (whole words).
    pub(super) jobs: Vec<&'static str>,
    /// Suffixes that make a Chinese occupation ("…师", "…员").
    pub(super) job_suffixes: Vec<&'static str>,
    /// Words with a job suffix that are not jobs.
    pub(super) not_jobs: Vec<&'static str>,
    /// Chinese gender words.
    pub(super) gender: Vec<&'static str>,
    /// Chinese character traits.
    pub(super) traits: Vec<&'static str>,
    /// Chinese family members, longest first so "妈妈" wins over "妈".
    pub(super) family: Vec<&'static str>,
    /// Chinese partners, friends and colleagues, longest first.
    pub(super) relations: Vec<&'static str>,
    /// Relationship states said of oneself ("我结婚了", "我单身").
    pub(super) relation_states: Vec<&'static str>,
    /// Animals people keep.
    pub(super) pets: Vec<&'static str>,
    /// Words after "我" that change nothing for the rules ("我也", "我其实").
    pub(super) fillers: Vec<&'static str>,
    /// Intensifiers, dropped from personality values.
    pub(super) intensifiers: Vec<&'static str>,
    /// Hedges kept in personality values ("有点内向").
    pub(super) hedges: Vec<&'static str>,
    /// Negations, longest first.
    pub(super) negations: Vec<&'static str>,
    /// Past markers ("我以前住在北京").
    pub(super) past: Vec<&'static str>,
    /// Frequency words that mark a habit.
    pub(super) frequency: Vec<&'static str>,
    /// Time words that mark a plan ("我明年要…").
    pub(super) future: Vec<&'static str>,
    /// Words that end a Chinese value ("我喜欢爬山因为…" → "爬山").
    pub(super) cut_words: Vec<&'static str>,
    /// Particles and marks trimmed from the end of a Chinese value.
    pub(super) trailing: Vec<char>,
    /// Pronouns: a like or plan whose object is one is about the listener, not a preference.
    pub(super) pronouns: Vec<&'static str>,
    /// Measure words before a noun ("一只", "两个").
    pub(super) measures: Vec<&'static str>,
    /// Words before 人 that make a kind of person, not a place of origin ("好人", "外地人").
    pub(super) not_places: Vec<&'static str>,
    /// Endings of nouns before 的 that name an institution ("北京大学的学生").
    pub(super) institution_suffixes: Vec<&'static str>,
}

impl ChineseWords {
    fn parse(mut lists: WordLists) -> Result<Self, WordListError> {
        let words = ChineseWords {
            jobs: lists.words("jobs")?,
            job_suffixes: lists.words("job_suffixes")?,
            not_jobs: lists.words("not_jobs")?,
            gender: lists.words("gender")?,
            traits: lists.words("traits")?,
            family: lists.words("family")?,
            relations: lists.words("relations")?,
            relation_states: lists.words("relation_states")?,
            pets: lists.words("pets")?,
            fillers: lists.words("fillers")?,
            intensifiers: lists.words("intensifiers")?,
            hedges: lists.words("hedges")?,
            negations: lists.words("negations")?,
            past: lists.words("past")?,
            frequency: lists.words("frequency")?,
            future: lists.words("future")?,
            cut_words: lists.words("cut_words")?,
            trailing: lists.chars("trailing")?,
            pronouns: lists.words("pronouns")?,
            measures: lists.words("measures")?,
            not_places: lists.words("not_places")?,
            institution_suffixes: lists.words("institution_suffixes")?,
        };
        lists.finish()?;
        Ok(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_lists_load_with_their_key_entries() {
        let lexicon = PersonaLexicon::shared().unwrap();
        let (en, zh) = (&lexicon.en, &lexicon.zh);
        assert!(en.jobs.contains(&"nurse") && en.not_jobs.contains(&"optimist"));
        assert!(en.trait_nouns.contains(&"people person"));
        assert!(en.family.contains(&"sister") && en.pets.contains(&"dog"));
        assert_eq!(en.cut_pairs.first(), Some(&("a", "lot")));
        assert!(en.fillers.contains(&"really") && en.deictic.contains(&"the way"));
        assert!(zh.jobs.contains(&"老师") && zh.job_suffixes.contains(&"师"));
        assert!(zh.family.contains(&"妈妈") && zh.relations.contains(&"男朋友"));
        assert!(zh.trailing.contains(&'了') && zh.trailing.contains(&'～'));
        assert!(zh.negations.contains(&"不") && zh.cut_words.contains(&"的也"));
        assert!(zh.institution_suffixes.contains(&"大学"));
    }

    #[test]
    fn a_defective_file_is_an_error_not_a_shorter_list() {
        let missing = PersonaLexicon::parse(PERSONA_EN, "[jobs]\n老师\n");
        assert!(matches!(
            missing,
            Err(WordListError::MissingList {
                file: "persona_zh.txt",
                ..
            })
        ));
        const EXTRA: &str = concat!(include_str!("../lexicon/persona_en.txt"), "[job]\nnurse\n");
        assert!(matches!(
            PersonaLexicon::parse(EXTRA, PERSONA_ZH),
            Err(WordListError::UnreadList { list, .. }) if list == "job"
        ));
    }
}
