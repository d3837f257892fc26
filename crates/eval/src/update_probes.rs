//! Knowledge-update probes: plant a fact, later plant its update, then ask for the current
//! value.
//!
//! Neither LoCoMo nor ZH-4O tests updates, so the probes are generated here from templates
//! written for this purpose (English and Chinese, never translations of a user's text): seven
//! slots — residence, job, partner, pet, preference, plan, number — each with phrasings of the
//! first statement, the update and the question, and pairs of (stale, current) values.
//!
//! A probe goes into a host conversation the way ZH-4O's probes go into theirs: the first
//! statement and the update are user messages inserted before the host messages at seeded
//! positions (the statement in the first third of the stream, the update in the second), each
//! followed by the other speaker's short acknowledgment, and the question is asked after the
//! last streamed message (the stream stops at a seeded point in its last sixth). English probes
//! go into LoCoMo conversations, Chinese ones into ZH-4O dialogues, round robin over the hosts.
//! The update never names the stale value, so a context that still shows the stale value
//! shows it because the first statement is there.
//!
//! A value pair is skipped for a host whose text already contains either value (the score
//! looks for the values in the context text, so they must come from the probe alone).

use mnemos_core::{Metadata, Role, Timestamp};
use serde::{Deserialize, Serialize};

use crate::dataset::{Conversation, Item, Question};
use crate::protocol::{Ask, PreparedConversation, SeededRng};
use crate::scoring::answer_in_context;

/// The language of a probe (and of its host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeLanguage {
    En,
    Zh,
}

impl ProbeLanguage {
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeLanguage::En => "en",
            ProbeLanguage::Zh => "zh",
        }
    }

    /// The other speaker's reply to an inserted message.
    fn acknowledgment(self) -> &'static str {
        match self {
            ProbeLanguage::En => "Got it, thanks for telling me.",
            ProbeLanguage::Zh => "好的，我记住了。",
        }
    }
}

/// What a probe's fact is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateSlot {
    Residence,
    Job,
    Partner,
    Pet,
    Preference,
    Plan,
    Number,
}

impl UpdateSlot {
    pub const ALL: [UpdateSlot; 7] = [
        UpdateSlot::Residence,
        UpdateSlot::Job,
        UpdateSlot::Partner,
        UpdateSlot::Pet,
        UpdateSlot::Preference,
        UpdateSlot::Plan,
        UpdateSlot::Number,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            UpdateSlot::Residence => "residence",
            UpdateSlot::Job => "job",
            UpdateSlot::Partner => "partner",
            UpdateSlot::Pet => "pet",
            UpdateSlot::Preference => "preference",
            UpdateSlot::Plan => "plan",
            UpdateSlot::Number => "number",
        }
    }
}

/// The texts of one slot in one language; `{v}` stands for the value.
struct Template {
    slot: UpdateSlot,
    language: ProbeLanguage,
    statement: &'static str,
    update: &'static str,
    question: &'static str,
    /// (stale, current) value pairs.
    values: &'static [(&'static str, &'static str)],
}

const TEMPLATES: &[Template] = &[
    Template {
        slot: UpdateSlot::Residence,
        language: ProbeLanguage::En,
        statement: "By the way, I live in {v} these days, in a small flat near the river.",
        update: "Big news: I just moved, and home is {v} now.",
        question: "Which city do I live in now?",
        values: &[
            ("Tallinn", "Porto"),
            ("Winnipeg", "Ljubljana"),
            ("Tucson", "Bergen"),
        ],
    },
    Template {
        slot: UpdateSlot::Residence,
        language: ProbeLanguage::Zh,
        statement: "对了，我现在住在{v}，房子离江边不远。",
        update: "告诉你个消息，我刚搬完家，现在住在{v}了。",
        question: "我现在住在哪个城市？",
        values: &[("洛阳", "厦门"), ("兰州", "珠海"), ("桂林", "大连")],
    },
    Template {
        slot: UpdateSlot::Job,
        language: ProbeLanguage::En,
        statement: "I work as a {v} at the moment, and the hours are long.",
        update: "I changed careers last month; I'm a {v} now.",
        question: "What is my job now?",
        values: &[
            ("pharmacist", "locksmith"),
            ("surveyor", "sommelier"),
            ("dental hygienist", "air traffic controller"),
        ],
    },
    Template {
        slot: UpdateSlot::Job,
        language: ProbeLanguage::Zh,
        statement: "我目前的工作是{v}，每天都挺忙的。",
        update: "我上个月换工作了，现在是一名{v}。",
        question: "我现在做什么工作？",
        values: &[
            ("药剂师", "锁匠"),
            ("测绘员", "品酒师"),
            ("牙科护士", "空中交通管制员"),
        ],
    },
    Template {
        slot: UpdateSlot::Partner,
        language: ProbeLanguage::En,
        statement: "My partner {v} and I have been together for two years.",
        update: "I'm seeing someone new now; their name is {v}.",
        question: "What is my partner's name now?",
        values: &[
            ("Ingrid", "Tobias"),
            ("Marisol", "Dmitri"),
            ("Callum", "Yusuf"),
        ],
    },
    Template {
        slot: UpdateSlot::Partner,
        language: ProbeLanguage::Zh,
        statement: "我和对象{v}已经在一起两年了。",
        update: "我现在有了新的对象，名字叫{v}。",
        question: "我现在的对象叫什么名字？",
        values: &[
            ("郝思远", "钟雨桐"),
            ("邵晓棠", "骆一鸣"),
            ("龚子健", "夏沐晴"),
        ],
    },
    Template {
        slot: UpdateSlot::Pet,
        language: ProbeLanguage::En,
        statement: "My cat is called {v}; she sleeps on my keyboard.",
        update: "We gave our cat a new name after the vet visit; she answers to {v} now.",
        question: "What is my cat called now?",
        values: &[
            ("Biscotti", "Pumpernickel"),
            ("Marzipan", "Octavia"),
            ("Noodle", "Fennel"),
        ],
    },
    Template {
        slot: UpdateSlot::Pet,
        language: ProbeLanguage::Zh,
        statement: "我家的猫叫{v}，总爱趴在我的键盘上睡觉。",
        update: "我们给猫改了名字，现在叫它{v}。",
        question: "我家的猫现在叫什么名字？",
        values: &[("芝麻糊", "小橘灯"), ("棉花糖", "月饼"), ("布丁", "年糕")],
    },
    Template {
        slot: UpdateSlot::Preference,
        language: ProbeLanguage::En,
        statement: "My favourite drink is {v}; I have one every afternoon.",
        update: "My taste has changed: these days my favourite drink is {v}.",
        question: "What is my favourite drink now?",
        values: &[
            ("hibiscus tea", "cold brew"),
            ("oat milk chai", "sparkling yuzu"),
            ("mango lassi", "barley tea"),
        ],
    },
    Template {
        slot: UpdateSlot::Preference,
        language: ProbeLanguage::Zh,
        statement: "我最喜欢喝{v}，每天下午都要来一杯。",
        update: "我的口味变了，现在最喜欢喝{v}。",
        question: "我现在最喜欢喝什么？",
        values: &[
            ("桂花乌龙", "冷萃咖啡"),
            ("酸梅汤", "椰子水"),
            ("杏仁露", "大麦茶"),
        ],
    },
    Template {
        slot: UpdateSlot::Plan,
        language: ProbeLanguage::En,
        statement: "I'm planning a trip to {v} next spring.",
        update: "Change of plans for next spring: the trip is going to {v}.",
        question: "Where am I travelling next spring?",
        values: &[
            ("Patagonia", "Tasmania"),
            ("Zanzibar", "Svalbard"),
            ("Hokkaido", "the Azores"),
        ],
    },
    Template {
        slot: UpdateSlot::Plan,
        language: ProbeLanguage::Zh,
        statement: "我打算明年春天去{v}旅行。",
        update: "明年春天的计划变了，我要去{v}。",
        question: "我明年春天要去哪里旅行？",
        values: &[
            ("喀纳斯", "西双版纳"),
            ("稻城亚丁", "长白山"),
            ("敦煌", "涠洲岛"),
        ],
    },
    Template {
        slot: UpdateSlot::Number,
        language: ProbeLanguage::En,
        statement: "I run {v} kilometres every week to stay fit.",
        update: "I've stepped up my training: I now run {v} kilometres a week.",
        question: "How many kilometres do I run each week now?",
        values: &[("17", "42"), ("23", "56"), ("31", "64")],
    },
    Template {
        slot: UpdateSlot::Number,
        language: ProbeLanguage::Zh,
        statement: "为了保持身材，我每周跑{v}公里。",
        update: "我加大了训练量，现在每周跑{v}公里。",
        question: "我现在每周跑多少公里？",
        values: &[("17", "42"), ("23", "56"), ("31", "64")],
    },
];

/// Item labels of a probe's inserted messages in its stream.
pub const STATEMENT_LABEL: &str = "update-probe-statement";
pub const UPDATE_LABEL: &str = "update-probe-update";

/// One generated probe, ready to stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdateProbe {
    /// `en-residence-0`: language, slot, value pair.
    pub id: String,
    pub language: ProbeLanguage,
    pub slot: UpdateSlot,
    /// The host conversation's id.
    pub host: String,
    pub stale: String,
    pub current: String,
    pub statement: String,
    pub update: String,
    pub question: String,
    /// The stream: the host with the two messages inserted, cut after the question's point,
    /// and the question asked at its end.
    pub stream: PreparedConversation,
}

/// Generate every template's probes for `language`, placed into `hosts` round robin with
/// positions drawn from `seed`. Hosts need at least 12 items; a value pair goes to the next host
/// whose text contains neither value (skipped when none qualifies).
pub fn update_probes(
    language: ProbeLanguage,
    hosts: &[Conversation],
    seed: u64,
    count_tokens: &dyn Fn(&str) -> usize,
) -> Vec<UpdateProbe> {
    let hosts: Vec<(&Conversation, String)> = hosts
        .iter()
        .filter(|h| h.items.len() >= 12)
        .map(|h| (h, host_text(h)))
        .collect();
    if hosts.is_empty() {
        return Vec::new();
    }
    let mut rng = SeededRng::new(seed);
    let mut next_host = 0usize;
    let mut probes = Vec::new();
    // Pair by pair across the slots, so the first seven probes cover every slot.
    let templates: Vec<&Template> = TEMPLATES
        .iter()
        .filter(|t| t.language == language)
        .collect();
    let pairs = templates.iter().map(|t| t.values.len()).max().unwrap_or(0);
    for pair in 0..pairs {
        for template in &templates {
            let Some((stale, current)) = template.values.get(pair) else {
                continue;
            };
            let free = (0..hosts.len())
                .map(|k| (next_host + k) % hosts.len())
                .find(|&h| !mentions(&hosts[h].1, stale) && !mentions(&hosts[h].1, current));
            let Some(h) = free else { continue };
            next_host = h + 1;
            let id = format!("{}-{}-{pair}", language.as_str(), template.slot.as_str());
            probes.push(build(
                template,
                (*stale, *current),
                id,
                hosts[h].0,
                &mut rng,
                count_tokens,
            ));
        }
    }
    probes
}

fn host_text(host: &Conversation) -> String {
    let joined: Vec<&str> = host.items.iter().map(|i| i.text.as_str()).collect();
    joined.join("\n")
}

/// Whether `text` holds `value` as the scores look for it.
fn mentions(text: &str, value: &str) -> bool {
    answer_in_context(value, text)
}

/// Where the two messages go and where the stream stops, as item positions of the host.
struct Placement {
    statement_at: usize,
    update_at: usize,
    stop_at: usize,
}

impl Placement {
    /// Statement in the first third, update in the second, stop in the last sixth.
    fn draw(len: usize, rng: &mut SeededRng) -> Placement {
        let within =
            |rng: &mut SeededRng, from: usize, to: usize| from + rng.below((to - from).max(1));
        let statement_at = within(rng, len / 12, len / 3);
        let update_at = within(rng, len / 3 + 1, 2 * len / 3);
        let stop_at = within(rng, 5 * len / 6, len + 1).min(len);
        Placement {
            statement_at,
            update_at,
            stop_at,
        }
    }
}

fn build(
    template: &Template,
    (stale, current): (&str, &str),
    id: String,
    host: &Conversation,
    rng: &mut SeededRng,
    count_tokens: &dyn Fn(&str) -> usize,
) -> UpdateProbe {
    let statement = template.statement.replace("{v}", stale);
    let update = template.update.replace("{v}", current);
    let question = template.question.to_string();
    let place = Placement::draw(host.items.len(), rng);
    let (user, other) = speakers(host);
    let ack = template.language.acknowledgment();
    let mut items = Vec::with_capacity(place.stop_at + 4);
    for (position, item) in host.items.iter().take(place.stop_at).enumerate() {
        let inserted = if position == place.statement_at {
            Some((STATEMENT_LABEL, &statement))
        } else if position == place.update_at {
            Some((UPDATE_LABEL, &update))
        } else {
            None
        };
        if let Some((label, text)) = inserted {
            items.push(inserted_item(label, Role::User, &user, text, item));
            let ack_label = format!("{label}-ack");
            items.push(inserted_item(
                &ack_label,
                Role::Assistant,
                &other,
                ack,
                item,
            ));
        }
        items.push(item.clone());
    }
    let asked_at = items.last().and_then(|i| i.time);
    let question_item = Question {
        id: format!("{id}/q"),
        text: question.clone(),
        answer: Some(current.to_string()),
        gold: vec![UPDATE_LABEL.to_string()],
        category: template.slot.as_str().to_string(),
        memory_type: None,
        after_item: items.len(),
        time: asked_at,
        choices: Vec::new(),
        correct_choice: None,
        as_of: None,
        metadata: Metadata::new(),
    };
    let tokens: usize = items.iter().map(|i| count_tokens(&i.text)).sum();
    let ask = Ask {
        question: 0,
        after_item: items.len(),
        history_tokens: tokens,
        final_ask: true,
        checkpoint: None,
    };
    let stream = PreparedConversation {
        real_items: items.len(),
        conversation: Conversation {
            id: format!("update-{id}"),
            items,
            questions: vec![question_item],
        },
        asks: vec![ask],
        noise_items: 0,
        tokens,
        contaminated: Vec::new(),
    };
    UpdateProbe {
        id,
        language: template.language,
        slot: template.slot,
        host: host.id.clone(),
        stale: stale.to_string(),
        current: current.to_string(),
        statement,
        update,
        question,
        stream,
    }
}

/// The names the host gives its user and its other speaker (the first named item of each role).
fn speakers(host: &Conversation) -> (Option<String>, Option<String>) {
    let named = |role: Role| {
        host.items
            .iter()
            .find(|i| i.role == role && i.speaker.is_some())
            .and_then(|i| i.speaker.clone())
    };
    (named(Role::User), named(Role::Assistant))
}

/// A message inserted before `next`, in its session and at its time.
fn inserted_item(
    label: &str,
    role: Role,
    speaker: &Option<String>,
    text: &str,
    next: &Item,
) -> Item {
    Item {
        label: label.to_string(),
        role,
        speaker: speaker.clone(),
        text: text.to_string(),
        time: next.time.map(|t| Timestamp(t.0.saturating_sub(1))),
        session: next.session.clone(),
        metadata: Metadata::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(id: &str, n: usize) -> Conversation {
        let items = (0..n)
            .map(|i| Item {
                label: i.to_string(),
                role: if i % 2 == 0 {
                    Role::User
                } else {
                    Role::Assistant
                },
                speaker: Some(if i % 2 == 0 { "Ann" } else { "Bo" }.to_string()),
                text: "a message about the weather".to_string(),
                time: Some(Timestamp(1_000_000 + i as i64 * 1000)),
                session: (i / 40).to_string(),
                metadata: Metadata::new(),
            })
            .collect();
        Conversation {
            id: id.into(),
            items,
            questions: Vec::new(),
        }
    }

    fn words(text: &str) -> usize {
        text.split_whitespace().count()
    }

    #[test]
    fn every_slot_has_probes_in_both_languages() {
        for language in [ProbeLanguage::En, ProbeLanguage::Zh] {
            let probes = update_probes(language, &[host("a", 120), host("b", 90)], 7, &words);
            assert_eq!(probes.len(), 21, "{language:?}");
            for slot in UpdateSlot::ALL {
                assert_eq!(probes.iter().filter(|p| p.slot == slot).count(), 3);
            }
            assert!(probes.iter().any(|p| p.host == "a") && probes.iter().any(|p| p.host == "b"));
        }
    }

    #[test]
    fn the_statement_comes_before_the_update_and_the_question_after_both() {
        for probe in update_probes(ProbeLanguage::En, &[host("a", 200)], 3, &words) {
            let items = &probe.stream.conversation.items;
            let at = |label: &str| items.iter().position(|i| i.label == label).unwrap();
            let (s, u) = (at(STATEMENT_LABEL), at(UPDATE_LABEL));
            assert!(s < u, "{}", probe.id);
            assert_eq!(items[s].role, Role::User);
            assert_eq!(items[s].speaker.as_deref(), Some("Ann"));
            assert_eq!(items[s + 1].role, Role::Assistant);
            assert_eq!(items[s].session, items[s + 2].session);
            assert!(items[s].time < items[s + 2].time);
            assert!(items[s].text.contains(&probe.stale));
            assert!(items[u].text.contains(&probe.current));
            assert!(
                !items[u].text.contains(&probe.stale),
                "the update never names the stale value"
            );
            let ask = &probe.stream.asks[0];
            assert_eq!(ask.after_item, items.len());
            assert!(items.len() >= 200 * 5 / 6);
            assert_eq!(probe.stream.conversation.questions[0].gold, [UPDATE_LABEL]);
            assert_eq!(
                probe.stream.conversation.questions[0].answer.as_deref(),
                Some(probe.current.as_str())
            );
        }
    }

    #[test]
    fn positions_are_seeded() {
        let a = update_probes(ProbeLanguage::Zh, &[host("a", 150)], 11, &words);
        let b = update_probes(ProbeLanguage::Zh, &[host("a", 150)], 11, &words);
        let c = update_probes(ProbeLanguage::Zh, &[host("a", 150)], 12, &words);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn a_host_that_already_names_a_value_is_not_used_for_it() {
        let mut named = host("named", 100);
        named.items[5].text = "I grew up in Tallinn.".into();
        let probes = update_probes(
            ProbeLanguage::En,
            &[named.clone(), host("plain", 100)],
            1,
            &words,
        );
        let residence = probes.iter().find(|p| p.stale == "Tallinn").unwrap();
        assert_eq!(residence.host, "plain");
        let only = update_probes(ProbeLanguage::En, &[named], 1, &words);
        assert!(only.iter().all(|p| p.stale != "Tallinn"));
        assert_eq!(only.len(), 20);
    }

    #[test]
    fn short_hosts_are_not_used() {
        assert!(update_probes(ProbeLanguage::En, &[host("tiny", 5)], 1, &words).is_empty());
    }
}
