//! Word lists and the pattern fragments built from them.
//!
//! Open classes (places, occupations, names) are recognized by shape wherever possible
//! (capitalization, Chinese suffixes such as 市/员/师); the lists here hold the closed classes
//! (relations, species, roles, event and project nouns) and the occupation head nouns that
//! shape alone cannot tell from ordinary nouns.

/// The regex fragment for a `{PLACEHOLDER}` in a rule pattern.
pub(super) fn placeholder(name: &str) -> Option<String> {
    let fragment = match name {
        // A capitalized name of one to three words, or a Han name.
        "NAME" => r"(?-i:\p{Lu}[\p{L}\p{M}'’-]*(?:[ \t]+\p{Lu}[\p{L}\p{M}'’-]*){0,2}|\p{Han}{1,4})"
            .to_string(),
        // An organization: a capitalized name, or "the company" and the like.
        "ORG" => format!(
            r"(?:(?:the|our|my)\s+(?:{})|(?-i:[\p{{Lu}}\d][\p{{L}}\p{{N}}&'’.-]*(?:[ \t]+(?:&[ \t]+)?[\p{{Lu}}\d][\p{{L}}\p{{N}}&'’.-]*){{0,3}}))",
            ORG_NOUNS.join("|")
        ),
        "ROLE" => alternation(ROLES),
        "SPECIES" => alternation(SPECIES),
        "EVENT" => alternation(&[EVENTS, PROVIDERS].concat()),
        "PROJECT" => alternation(PROJECTS),
        "NUM" => NUMBER.to_string(),
        // Drinks whose habit a line may end ("I quit coffee", "I no longer drink alcohol").
        "DRINKS" => r"(?:coffee|alcohol|booze|beer|wine|caffeine|soda|fizzy\s+drinks|soft\s+drinks|energy\s+drinks|sugary\s+drinks|spirits|liquor|cow['’]s\s+milk|milk)".to_string(),
        "DIET" => alternation(&[DIET_ADJECTIVES, DIET_NAMES].concat()),
        "DIETADJ" => alternation(DIET_ADJECTIVES),
        // Abbreviated fields only in capitals: "I work in IT", not "I'm in it".
        "FIELD" => format!(
            "(?:(?-i:IT|HR|PR|AI|QA|UX|TV|R&D)|{})",
            alternation(FIELDS)
        ),
        "NUMWORD" => number_word_pattern(),
        "ROLEZH" => alternation(ROLES_ZH),
        "SPECIESZH" => alternation(SPECIES_ZH),
        "EVENTZH" => alternation(EVENTS_ZH),
        "PROJECTZH" => alternation(PROJECTS_ZH),
        "DIETZH" => r"(?:素食|纯素食?|全素|鱼素|蛋奶素|奶素|生酮饮食|生酮|低碳水饮食|低碳饮食|低碳水|无麸质饮食|无麸质|地中海饮食|轻断食|间歇性断食|断食|清真饮食|低脂饮食|低糖饮食|高蛋白饮食|控糖饮食|\p{Han}{1,4}饮食)".to_string(),
        "DRINKSZH" => "(?:咖啡|白酒|啤酒|红酒|酒|奶茶|可乐|碳酸饮料|含糖饮料|饮料|牛奶)".to_string(),
        "NUMZH" => r"(?:\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百千万亿半]+)".to_string(),
        _ => return None,
    };
    Some(fragment)
}

/// `(?:a|b|…)` with longer alternatives first, so "vice president" wins over "president".
fn alternation(words: &[&str]) -> String {
    let mut sorted: Vec<&str> = words.to_vec();
    sorted.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
    let escaped: Vec<String> = sorted
        .iter()
        .map(|w| regex::escape(w).replace(' ', r"\s+"))
        .collect();
    format!("(?:{})", escaped.join("|"))
}

/// A number as people write it: digits with separators, a currency sign and a k/m suffix, or
/// number words ("forty-two", "a dozen").
const NUMBER: &str = r"(?:[$€£¥]\s?)?(?:\d[\d,]*(?:\.\d+)?(?:\s?[kKmM]\b)?|(?:a\s+)?dozen|(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|a\s+hundred|hundred)(?:[-\s](?:one|two|three|four|five|six|seven|eight|nine))?(?:\s+(?:hundred|thousand))?(?:\s+(?:and\s+)?(?:one|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[-\s](?:one|two|three|four|five|six|seven|eight|nine))?)?)";

fn number_word_pattern() -> String {
    NUMBER.to_string()
}

/// Diets that describe a person on their own ("I'm vegan", "I went keto").
#[rustfmt::skip]
pub(super) const DIET_ADJECTIVES: &[&str] = &[
    "vegetarian", "veggie", "vegan", "pescatarian", "pescetarian", "plant-based", "plant based",
    "keto", "paleo", "gluten-free", "dairy-free", "lactose-free", "sugar-free", "carnivore",
    "flexitarian", "kosher", "halal", "raw vegan", "fruitarian", "lacto-vegetarian",
    "ovo-vegetarian", "lacto-ovo vegetarian", "low-carb", "low carb",
];

/// Diets named only before "diet" ("a Mediterranean diet", "the Atkins diet").
#[rustfmt::skip]
pub(super) const DIET_NAMES: &[&str] = &[
    "ketogenic", "mediterranean", "atkins", "whole30", "dash", "low-fat", "low fat",
    "low-sodium", "low-fodmap", "low fodmap", "high-protein", "high protein", "raw food",
    "macrobiotic", "nordic", "zone", "south beach", "elimination", "intermittent fasting",
    "nut-free", "egg-free", "soy-free", "grain-free", "whole-food plant-based", "low-calorie",
    "low-sugar", "anti-inflammatory", "diabetic", "renal", "liquid", "juice",
];

/// Lines of work named after "I work in" ("marketing", "finance").
#[rustfmt::skip]
pub(super) const FIELDS: &[&str] = &[
    "marketing", "sales", "finance", "accounting", "tech", "technology", "human resources", "healthcare", "health care", "education", "retail", "hospitality",
    "construction", "insurance", "banking", "investment banking", "consulting", "law",
    "medicine", "nursing", "engineering", "software", "software engineering", "design",
    "graphic design", "ux design", "publishing", "media", "advertising", "journalism",
    "research", "academia", "government", "logistics", "real estate", "public relations",
    "customer service", "customer support", "operations", "product", "product management",
    "data science", "data analytics", "analytics", "cybersecurity", "security", "biotech",
    "pharma", "pharmaceuticals", "manufacturing", "agriculture", "fashion", "film", "television",
    "music", "gaming", "games", "energy", "oil and gas", "telecoms", "telecommunications",
    "transport", "transportation", "aviation", "social work", "recruitment", "recruiting",
    "procurement", "supply chain", "architecture", "policy", "nonprofits", "the nonprofit sector",
    "fintech", "e-commerce", "ecommerce", "compliance", "audit", "tax", "venture capital",
    "private equity", "property", "catering", "food service", "childcare", "elder care",
    "mental health", "public health", "dentistry", "veterinary medicine", "pharmacy",
    "biology", "chemistry", "physics", "robotics", "machine learning", "web development",
    "quality assurance", "devops", "events", "tourism", "translation", "localization",
];

/// Nouns that stand for an unnamed organization after "the/our/my".
#[rustfmt::skip]
pub(super) const ORG_NOUNS: &[&str] = &[
    "company", "firm", "startup", "start-up", "employer", "organization", "organisation",
    "business", "agency", "corporation",
];

/// Roles held at an organization (lower-case).
#[rustfmt::skip]
pub(super) const ROLES: &[&str] = &[
    "chief executive officer", "chief executive", "chief technology officer",
    "chief technical officer", "chief financial officer", "chief operating officer",
    "chief marketing officer", "chief product officer", "ceo", "cto", "cfo", "coo", "cmo", "cio",
    "cpo", "president", "vice president", "vp", "chairman", "chairwoman", "chairperson", "chair",
    "managing director", "general manager", "director", "head coach", "founder", "co-founder",
    "principal", "dean", "coach", "captain", "editor-in-chief", "editor in chief", "manager",
    "team lead", "owner", "mayor", "governor", "head",
];

/// Canonical form of a role: "chief executive officer" → "ceo".
pub(super) fn canonical_role(role: &str) -> String {
    let lower = role.to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let joined = words.join(" ");
    let canonical = match joined.as_str() {
        "chief executive officer"
        | "chief executive"
        | "首席执行官"
        | "老板"
        | "一把手"
        | "掌门人"
        | "当家人" => "ceo",
        "chief technology officer" | "chief technical officer" | "首席技术官" => "cto",
        "chief financial officer" | "首席财务官" => "cfo",
        "chief operating officer" | "首席运营官" => "coo",
        "chief marketing officer" => "cmo",
        "chief product officer" => "cpo",
        "chairman" | "chairwoman" | "chairperson" => "chair",
        "vice president" => "vp",
        "editor in chief" => "editor-in-chief",
        "co-founder" => "founder",
        other => return other.to_string(),
    };
    canonical.to_string()
}

/// Pet species; the qualifier is the canonical form ([`canonical_species`]).
#[rustfmt::skip]
pub(super) const SPECIES: &[&str] = &[
    "cat", "cats", "kitten", "kitty", "dog", "dogs", "puppy", "pup", "doggo", "hamster", "rabbit",
    "bunny", "parrot", "budgie", "cockatiel", "canary", "bird", "fish", "goldfish", "betta",
    "turtle", "tortoise", "snake", "lizard", "gecko", "iguana", "guinea pig", "ferret", "horse",
    "pony", "chinchilla", "hedgehog", "rat", "mouse", "gerbil", "axolotl", "tarantula", "chicken",
    "goat", "pig",
];

/// "kitten" → "cat", "puppy" → "dog", "猫咪" → "猫".
pub(super) fn canonical_species(word: &str) -> String {
    let lower = word.to_lowercase();
    let joined = lower.split_whitespace().collect::<Vec<_>>().join(" ");
    let canonical = match joined.as_str() {
        "cats" | "kitten" | "kitty" => "cat",
        "dogs" | "puppy" | "pup" | "doggo" => "dog",
        "bunny" => "rabbit",
        "goldfish" | "betta" => "fish",
        "budgie" => "parakeet",
        "猫咪" | "小猫" | "猫猫" | "喵星人" | "小猫咪" => "猫",
        "狗狗" | "小狗" | "狗子" | "汪星人" | "小狗狗" => "狗",
        "兔兔" | "小兔子" | "兔子" => "兔子",
        other => return other.to_string(),
    };
    canonical.to_string()
}

/// Relations a speaker names people by ("my sister"); the subject keeps the word as written.
#[rustfmt::skip]
pub(super) const RELATIONS: &[&str] = &[
    "sister", "brother", "sis", "bro", "mom", "mum", "mother", "mama", "dad", "father", "papa",
    "parents", "son", "daughter", "kid", "kids", "child", "children", "wife", "husband", "hubby",
    "girlfriend", "boyfriend", "gf", "bf", "partner", "fiancé", "fiancée", "fiance", "fiancee",
    "spouse", "friend", "bestie", "bff", "roommate", "flatmate", "housemate", "boss", "manager",
    "colleague", "coworker", "co-worker", "neighbor", "neighbour", "cousin", "aunt", "auntie",
    "uncle", "grandma", "grandmother", "granny", "nana", "grandpa", "grandfather", "granddad",
    "grandson", "granddaughter", "niece", "nephew", "sibling", "siblings", "stepmom", "stepmother",
    "stepdad", "stepfather", "stepbrother", "stepsister", "stepson", "stepdaughter",
    "half-brother", "half-sister", "mother-in-law", "father-in-law", "sister-in-law",
    "brother-in-law", "in-laws", "ex", "ex-wife", "ex-husband", "ex-girlfriend", "ex-boyfriend",
    "classmate", "teacher", "mentor", "landlord", "landlady", "therapist", "doctor", "twin",
    "baby",
];

/// Words that may stand between "my" and a relation ("my older sister").
pub(super) const RELATION_MODIFIERS: &[&str] = &[
    "older", "younger", "little", "big", "baby", "best", "elder", "eldest", "oldest", "youngest",
    "twin", "step", "late", "new", "current", "dear", "good", "close", "old", "middle", "lovely",
];

/// Chinese relation words ("我哥" → 哥), longest first in patterns.
#[rustfmt::skip]
pub(super) const RELATIONS_ZH: &[&str] = &[
    "妈妈", "妈", "母亲", "老妈", "爸爸", "爸", "父亲", "老爸", "爸妈", "父母", "哥哥", "哥", "大哥", "二哥", "姐姐", "姐",
    "大姐", "二姐", "弟弟", "弟", "妹妹", "妹", "老公", "老婆", "丈夫", "妻子", "爱人", "媳妇", "男朋友", "女朋友", "男友", "女友",
    "对象", "未婚夫", "未婚妻", "儿子", "女儿", "孩子", "闺女", "爷爷", "奶奶", "外公", "外婆", "姥姥", "姥爷", "叔叔", "阿姨",
    "舅舅", "舅妈", "姑姑", "姨妈", "婶婶", "表哥", "表姐", "表弟", "表妹", "堂哥", "堂姐", "堂弟", "堂妹", "朋友", "好朋友",
    "闺蜜", "哥们", "兄弟", "室友", "舍友", "同事", "老板", "领导", "上司", "老师", "同学", "邻居", "侄子", "侄女", "外甥",
    "外甥女", "孙子", "孙女", "岳父", "岳母", "公公", "婆婆", "前任", "前妻", "前夫",
];

/// Events whose day or time a line may set ("the dentist appointment is on Wednesday").
#[rustfmt::skip]
pub(super) const EVENTS: &[&str] = &[
    "appointment", "meeting", "call", "interview", "exam", "test", "party", "wedding", "flight",
    "dinner", "lunch", "breakfast", "date", "deadline", "check-up", "checkup", "surgery",
    "operation", "concert", "game", "match", "class", "lesson", "session", "presentation", "demo",
    "review", "standup", "stand-up", "sync", "workshop", "conference", "ceremony", "graduation",
    "celebration", "reunion", "recital", "show", "gig", "visit", "move", "move-in", "launch",
    "hearing", "trial", "shower", "barbecue", "bbq", "potluck", "playdate", "haircut", "massage",
    "cleaning", "consultation", "screening", "viewing", "closing", "delivery", "training",
    "rehearsal", "practice", "tournament", "race", "marathon", "trip", "departure", "arrival",
    "event", "shift",
];

/// People whose name stands for an appointment with them ("I booked the dentist for Friday").
#[rustfmt::skip]
pub(super) const PROVIDERS: &[&str] = &[
    "dentist", "doctor", "gp", "vet", "hairdresser", "barber", "physio", "physiotherapist",
    "therapist", "optician", "optometrist", "orthodontist", "dermatologist", "gynaecologist",
    "gynecologist", "chiropractor", "osteopath", "podiatrist", "dietitian", "nutritionist",
    "psychiatrist", "psychologist", "counsellor", "counselor", "specialist", "cardiologist",
    "allergist", "audiologist", "hygienist", "pediatrician", "paediatrician", "stylist",
    "groomer", "masseuse", "acupuncturist", "ophthalmologist", "midwife", "obgyn", "ob-gyn",
];

/// Events that are appointments with someone, named after them ("dentist appointment").
pub(super) const APPOINTMENTS: &[&str] = &[
    "appointment",
    "appt",
    "session",
    "consultation",
    "visit",
    "check-up",
    "checkup",
    "cleaning",
    "booking",
    "slot",
];

/// Chinese events.
#[rustfmt::skip]
pub(super) const EVENTS_ZH: &[&str] = &[
    "会议", "例会", "周会", "晨会", "开会", "会", "面试", "考试", "预约", "约会", "婚礼", "聚会", "派对", "航班", "飞机", "晚宴",
    "晚饭", "午饭", "聚餐", "饭局", "体检", "复诊", "手术", "答辩", "演出", "比赛", "课", "讲座", "发布会", "生日会", "生日派对",
    "截止日期", "交付", "出发", "复查", "检查", "演唱会", "音乐会", "年会", "培训", "汇报", "评审", "电话会", "视频会", "看牙", "牙医",
    "门诊", "签约", "搬家", "典礼", "毕业典礼", "婚宴", "活动", "火车", "高铁", "班机", "排练", "彩排",
];

/// Nouns that name a project or task whose state a line may report.
#[rustfmt::skip]
pub(super) const PROJECTS: &[&str] = &[
    "project", "task", "migration", "launch", "release", "rollout", "roll-out", "redesign",
    "refactor", "refactoring", "renovation", "remodel", "build", "feature", "sprint", "thesis",
    "dissertation", "manuscript", "novel", "book", "app", "website", "site", "campaign", "study",
    "experiment", "pilot", "audit", "integration", "upgrade", "prototype", "proposal",
    "application", "merger", "acquisition", "deal", "initiative", "product", "report", "paper",
    "grant", "construction", "extension", "move",
];

/// Chinese project and task nouns (a phrase ending in one names a project).
pub(super) const PROJECTS_ZH: &[&str] = &[
    "项目", "任务", "工程", "论文", "装修", "迁移", "系统", "产品", "网站", "应用", "方案", "课题",
    "实验", "计划", "版本", "需求", "功能", "合同", "申请", "开发",
];

/// Well-known Chinese companies whose names jieba reads as places or plain nouns (京东, 百度).
#[rustfmt::skip]
pub(super) const KNOWN_ORGS_ZH: &[&str] = &[
    "腾讯", "阿里", "阿里巴巴", "京东", "百度", "华为", "小米", "美团", "字节", "字节跳动", "网易",
    "拼多多", "滴滴", "快手", "携程", "大疆", "比亚迪", "蔚来", "理想", "中兴", "联想", "平安", "顺丰",
    "新浪", "搜狐", "微软", "谷歌", "苹果公司", "亚马逊", "特斯拉", "招行", "工行", "建行", "农行",
    "中行", "中石油", "中石化", "国家电网", "格力", "美的", "海尔", "万科", "碧桂园", "得物", "小红书",
    "哔哩哔哩", "B站", "知乎", "蚂蚁", "蚂蚁金服", "饿了么", "贝壳", "链家", "米哈游", "商汤", "旷视",
];

/// Chinese roles at an organization.
#[rustfmt::skip]
pub(super) const ROLES_ZH: &[&str] = &[
    "CEO", "CTO", "CFO", "COO", "首席执行官", "首席技术官", "首席财务官", "首席运营官", "总经理", "总裁", "副总裁", "董事长",
    "总监", "经理", "主任", "校长", "院长", "部长", "主管", "负责人", "老板", "创始人", "主席", "队长", "教练", "主编", "总编",
    "行长", "厂长", "局长", "市长", "掌门人", "一把手", "总负责人",
];

/// Chinese pet species.
#[rustfmt::skip]
pub(super) const SPECIES_ZH: &[&str] = &[
    "猫", "猫咪", "小猫", "猫猫", "小猫咪", "喵星人", "狗", "狗狗", "小狗", "狗子", "小狗狗", "汪星人", "兔子", "兔兔", "小兔子",
    "仓鼠", "鹦鹉", "金鱼", "鱼", "乌龟", "龙猫", "刺猬", "蛇", "鸟", "小鸟", "马", "豚鼠", "荷兰猪", "蜥蜴", "八哥",
];

/// Occupation head nouns that neither end in a telling suffix nor are safe to guess.
#[rustfmt::skip]
pub(super) const OCCUPATIONS: &[&str] = &[
    "accountant", "actor", "actress", "administrator", "agent", "analyst", "anesthesiologist",
    "animator", "announcer", "architect", "archivist", "artist", "assistant", "astronaut",
    "athlete", "attorney", "auditor", "author", "baker", "banker", "barber", "barista",
    "bartender", "biologist", "blacksmith", "bookkeeper", "bricklayer", "broker", "builder",
    "butcher", "buyer", "carpenter", "cashier", "caregiver", "carer", "chef", "chemist",
    "chiropractor", "cleaner", "clerk", "coach", "columnist", "comedian", "composer", "consultant",
    "contractor", "cook", "copywriter", "counselor", "counsellor", "courier", "curator", "dancer",
    "dentist", "designer", "detective", "developer", "dietitian", "diplomat", "director",
    "dispatcher", "doctor", "doula", "driver", "economist", "editor", "electrician", "engineer",
    "entrepreneur", "esthetician", "farmer", "firefighter", "fisherman", "florist", "freelancer",
    "gardener", "geologist", "graphic designer", "guard", "guide", "hairdresser", "hairstylist",
    "historian", "hygienist", "illustrator", "influencer", "inspector", "instructor", "intern",
    "interpreter", "investor", "janitor", "jeweler", "jeweller", "journalist", "judge",
    "landscaper", "lawyer", "lecturer", "librarian", "lifeguard", "linguist", "lobbyist",
    "locksmith", "machinist", "maid", "manager", "mechanic", "mathematician", "midwife", "miner",
    "model", "musician", "nanny", "navigator", "nurse", "nutritionist", "officer", "optometrist",
    "paralegal", "paramedic", "pastor", "pharmacist", "philosopher", "photographer", "physician",
    "physicist", "physiotherapist", "pilot", "plumber", "poet", "police officer", "politician",
    "postman", "priest", "principal", "producer", "professor", "programmer", "psychiatrist",
    "psychologist", "publisher", "rabbi", "radiologist", "ranger", "realtor", "receptionist",
    "recruiter", "reporter", "researcher", "salesman", "saleswoman", "salesperson", "scientist",
    "sculptor", "secretary", "senator", "server", "sheriff", "singer", "soldier", "solicitor",
    "statistician", "stylist", "student", "supervisor", "surgeon", "surveyor", "tailor", "teacher",
    "technician", "therapist", "trader", "trainer", "translator", "tutor", "undergrad", "vet",
    "veterinarian", "waiter", "waitress", "welder", "writer", "youtuber", "streamer", "cop",
    "sailor", "marine", "medic", "ceo", "cto", "cfo", "founder", "co-founder", "professor",
    "postdoc", "lecturer", "dj", "tattooist", "carpenter", "roofer", "painter", "potter",
    "glazier", "upholsterer", "cobbler", "baker", "brewer", "winemaker", "sommelier", "beekeeper",
    "rancher", "zookeeper", "vet tech", "pharmacist", "optician", "paramedic", "dentist",
    "orthodontist", "podiatrist", "surgeon", "obstetrician", "pediatrician", "radiographer",
    "sonographer", "phlebotomist", "coder", "sysadmin", "webmaster", "data scientist",
    "product manager", "intern", "apprentice", "trainee", "housekeeper", "concierge", "bellhop",
    "chauffeur", "trucker", "pilot", "flight attendant", "steward", "stewardess", "controller",
    "dispatcher", "auctioneer", "appraiser", "notary", "mediator", "arbitrator", "bailiff",
    "warden", "prison guard", "security guard", "bodyguard", "firefighter", "lumberjack",
    "forester", "park ranger", "tour guide", "travel agent", "real estate agent", "estate agent",
    "insurance agent", "mortgage broker", "stockbroker", "actuary", "cartographer", "surveyor",
    "draftsman", "drafter", "administrator", "bureaucrat", "civil servant", "ambassador", "consul",
    "clergyman", "monk", "nun", "missionary", "imam", "chaplain", "minister", "teaching assistant",
    "substitute teacher", "headteacher", "headmaster", "headmistress", "dean", "provost",
    "registrar", "scholar", "academic", "fellow", "resident", "nurse practitioner", "caretaker",
    "babysitter", "au pair", "housewife", "homemaker", "stay-at-home mom", "stay-at-home dad",
    "stay-at-home parent", "stay-at-home mum", "team lead", "tech lead", "lead", "team leader",
];

/// Heads that end like occupations but are not ("a big fan", "a believer", "a smoker").
#[rustfmt::skip]
pub(super) const NOT_OCCUPATIONS: &[&str] = &[
    "fan", "person", "people", "member", "lover", "believer", "beginner", "newbie", "user",
    "fighter", "winner", "loser", "smoker", "drinker", "eater", "sleeper", "runner", "gamer",
    "reader", "thinker", "worrier", "introvert", "extrovert", "ambivert", "vegetarian", "vegan",
    "pescatarian", "christian", "libertarian", "optimist", "pessimist", "perfectionist", "realist",
    "idealist", "mother", "father", "brother", "sister", "daughter", "grandmother", "grandfather",
    "partner", "owner", "customer", "passenger", "stranger", "foreigner", "outsider", "insider",
    "leader", "follower", "supporter", "holder", "dreamer", "doer", "talker", "listener",
    "learner", "helper", "caller", "visitor", "neighbor", "neighbour", "survivor", "sucker",
    "monster", "disaster", "wreck", "mess", "mom", "mum", "dad", "parent", "wife", "husband",
    "widow", "widower", "bachelor", "spinster", "adult", "teenager", "kid", "child", "baby",
    "human", "guy", "girl", "boy", "woman", "man", "native", "local", "resident", "citizen",
    "immigrant", "expat", "tourist", "traveler", "traveller", "regular", "romantic", "genius",
    "nerd", "geek", "pro", "natural", "morning", "night", "owl", "lark", "homebody", "foodie",
    "animal", "dog", "cat", "vegetarian", "keto", "meat-eater", "teetotaler", "nonsmoker",
    "non-smoker", "shopper", "spender", "saver", "procrastinator", "overthinker", "people-pleaser",
    "ally", "member", "subscriber", "donor", "volunteer", "candidate", "applicant", "finalist",
    "nominee", "patient", "victim", "suspect", "liar", "cheater", "quitter", "fraud", "hypocrite",
    "skeptic", "sceptic", "cynic", "atheist", "agnostic", "catholic", "protestant", "muslim",
    "jew", "buddhist", "hindu", "conservative", "liberal", "democrat", "republican", "socialist",
    "feminist", "activist", "hoarder", "collector", "hobbyist", "amateur", "enthusiast", "addict",
    "junkie", "vegetarian", "stepmother", "stepfather", "minor", "senior", "junior", "sophomore",
    "freshman", "twin", "fraternal", "sibling", "single",
];

/// Adjectives that make "I'm a good cook" a judgement rather than a job.
#[rustfmt::skip]
pub(super) const JUDGEMENT_ADJECTIVES: &[&str] = &[
    "good", "great", "bad", "terrible", "awful", "decent", "huge", "big", "real", "total",
    "complete", "proud", "happy", "busy", "tired", "lucky", "terrific", "amazing", "horrible",
    "poor", "better", "worse", "best", "worst", "natural", "born", "frustrated", "wannabe",
    "failed", "aspiring", "would-be", "lousy", "excellent", "fantastic", "perfect", "messy",
    "sloppy", "careful", "picky", "fussy", "little", "bit",
];

/// Endings that mark an occupation noun (with [`NOT_OCCUPATIONS`] as exceptions).
pub(super) const OCCUPATION_SUFFIXES: &[&str] = &[
    "er", "or", "ist", "ian", "ant", "smith", "wright", "eer", "grapher", "logist", "man", "woman",
    "person", "keeper", "maker", "monger", "tician", "ician",
];

/// Chinese occupation endings: a noun phrase ending in one reads as a job (锁匠, 护士, 程序员).
#[rustfmt::skip]
pub(super) const OCCUPATION_SUFFIXES_ZH: &[&str] = &[
    "师", "员", "家", "匠", "工", "手", "士", "官", "长", "生", "夫", "警", "司机", "会计", "经理", "总监", "主管", "老板",
    "秘书", "编辑", "记者", "演员", "模特", "保姆", "教授", "博主", "主播", "网红", "导游", "店主", "老师", "医生", "律师", "歌手",
    "画家", "作家", "学生", "研究生", "博士", "总裁", "董事", "顾问", "代表", "专员", "助理", "助教", "外卖员", "快递员", "销售",
    "客服", "前台", "厨子", "大厨", "农民", "工人", "保安", "警察", "军人", "UP主", "up主", "主持人", "创始人", "合伙人",
    "自由职业者", "记者", "译者", "作者", "学者", "研究者", "从业者", "木匠", "铁匠", "裁缝", "骑手", "兽医", "中医", "保洁", "月嫂",
    "家教", "设计", "运营", "产品", "开发", "测试", "实习生",
];

/// Chinese nouns ending in a job suffix that are not jobs (北京人, 男生, 独生子…).
#[rustfmt::skip]
pub(super) const NOT_OCCUPATIONS_ZH: &[&str] = &[
    "先生", "男生", "女生", "医生的", "学生时代", "人家", "大家", "自家", "老家", "国家", "专家们", "老手", "新手", "高手", "对手",
    "选手们", "好手", "帮手", "志愿者", "素食者", "素食主义者", "爱好者", "患者", "粉丝", "吃货", "宅男", "宅女", "单身", "独生子",
    "独生女", "长", "老板娘", "一家", "人", "家长", "班长", "学长", "师兄", "师姐", "师弟", "师妹", "工作狂", "打工人", "夜猫子",
    "好人", "坏人", "新人", "老人", "本地人", "外地人", "北方人", "南方人",
];

/// Canonical qualifier words for favourites: "colour"/"color" → "colour", "beverage" → "drink".
pub(super) fn canonical_preference(word: &str) -> String {
    let canonical = match word {
        "color" | "colors" | "colours" => "colour",
        "beverage" | "beverages" | "drinks" => "drink",
        "meal" | "dish" | "foods" | "dishes" | "meals" => "food",
        "films" | "film" | "movies" => "movie",
        "tv" | "show" | "shows" | "series" => "show",
        "songs" | "tune" => "song",
        "bands" => "band",
        "books" | "novel" => "book",
        "artists" => "artist",
        "sports" => "sport",
        "喝的" | "饮品" | "饮料" | "喝" | "酒水" => "饮料",
        "吃的" | "食物" | "菜" | "吃" | "美食" => "食物",
        "听的" | "音乐" | "听" => "音乐",
        other => return other.to_string(),
    };
    canonical.to_string()
}

/// Capitalized words that are not names.
#[rustfmt::skip]
pub(super) const NOT_NAMES: &[&str] = &[
    "i", "i'm", "i've", "i'd", "i'll", "the", "a", "an", "my", "our", "your", "his", "her",
    "their", "its", "we", "you", "he", "she", "they", "it", "this", "that", "these", "those",
    "and", "but", "so", "then", "now", "well", "oh", "ok", "okay", "yes", "no", "yeah", "also",
    "actually", "today", "yesterday", "tomorrow", "monday", "tuesday", "wednesday", "thursday",
    "friday", "saturday", "sunday", "january", "february", "march", "april", "may", "june", "july",
    "august", "september", "october", "november", "december", "btw", "anyway", "update", "news",
    "guess", "finally", "apparently", "by", "in", "on", "at", "after", "before", "since", "when",
    "as", "last", "next", "big", "good", "great", "sadly", "luckily", "funny", "fun", "quick",
    "recently", "just", "lol", "haha", "hey", "hi", "hello", "sorry", "thanks", "wow", "what",
    "who", "where", "why", "how", "which", "there", "here", "if", "because", "although", "though",
    "while", "meanwhile", "plus", "every", "each", "some", "all", "both", "either", "neither",
    "one", "two", "mom", "dad", "mum", "god", "gosh", "omg", "christmas", "easter", "dr", "mr",
    "mrs", "ms", "prof", "sir", "madam", "miss", "please", "let's", "maybe", "perhaps", "imagine",
    "if", "even",
];
