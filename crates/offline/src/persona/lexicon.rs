//! Word lists the persona rules look words up in (EN lower case, ZH as written).

/// English occupation nouns (the head of "I'm a … nurse"), plus a suffix test for the rest.
pub(super) const EN_JOBS: &[&str] = &[
    "accountant", "actor", "actress", "analyst", "architect", "artist", "assistant", "athlete",
    "attorney", "author", "baker", "banker", "barber", "barista", "bartender", "blogger",
    "builder", "butcher", "carpenter", "cashier", "ceo", "chef", "chemist", "clerk", "coach",
    "consultant", "cook", "counselor", "counsellor", "dancer", "dentist", "designer", "developer",
    "director", "doctor", "driver", "economist", "editor", "electrician", "engineer", "farmer",
    "firefighter", "freelancer", "gardener", "guide", "hairdresser", "intern", "janitor",
    "journalist", "judge", "lawyer", "lecturer", "librarian", "manager", "mechanic", "medic",
    "midwife", "model", "musician", "nanny", "nurse", "officer", "painter", "paramedic",
    "pharmacist", "photographer", "physician", "physicist", "pilot", "plumber", "poet",
    "policeman", "policewoman", "producer", "professor", "programmer", "psychologist",
    "receptionist", "reporter", "researcher", "salesman", "saleswoman", "scientist",
    "secretary", "singer", "soldier", "student", "surgeon", "tailor", "teacher", "technician",
    "therapist", "trainer", "translator", "tutor", "vet", "veterinarian", "volunteer", "waiter",
    "waitress", "welder", "writer", "youtuber", "streamer", "entrepreneur", "founder",
    "freshman", "sophomore", "undergrad", "undergraduate", "grad", "phd", "postdoc", "cop",
    "firefighter", "dev", "instructor", "lifeguard", "miner", "sailor", "servant", "sheriff",
    "staffer", "supervisor", "vlogger", "worker",
];

/// Words ending in a job suffix that are not jobs.
pub(super) const EN_NOT_JOBS: &[&str] = &[
    "optimist", "pessimist", "perfectionist", "realist", "idealist", "minimalist", "list",
    "vegetarian", "christian", "elephant", "giant", "pageant", "peasant", "pheasant", "plant",
    "tenant", "pirate", "restaurant", "infant", "immigrant", "migrant", "guardian", "median",
    "pedestrian", "comedian", "introvert", "extrovert", "career", "assist", "twist", "exist",
    "playlist", "checklist", "wishlist", "persist", "insist", "resist",
];

/// Gender words ("I'm a woman", "as a trans man").
pub(super) const EN_GENDER: &[&str] = &[
    "man", "woman", "guy", "girl", "boy", "lady", "gentleman", "male", "female", "dude", "gal",
    "nonbinary", "non-binary", "transgender", "trans", "genderfluid", "agender",
];

/// Character traits (adjectives). States such as "tired" or "happy" are left out on purpose.
pub(super) const EN_TRAITS: &[&str] = &[
    "shy", "introverted", "extroverted", "extraverted", "outgoing", "friendly", "lazy",
    "stubborn", "patient", "impatient", "optimistic", "pessimistic", "creative", "curious",
    "organized", "organised", "messy", "calm", "anxious", "sensitive", "honest", "kind", "funny",
    "quiet", "talkative", "ambitious", "competitive", "independent", "adventurous", "easygoing",
    "easy-going", "laid-back", "hardworking", "hard-working", "confident", "insecure", "loyal",
    "generous", "introspective", "spontaneous", "cautious", "reserved", "social", "sociable",
    "empathetic", "caring", "emotional", "rational", "logical", "romantic", "picky", "clumsy",
    "forgetful", "disciplined", "determined", "nerdy", "geeky", "cheerful", "grumpy",
    "positive", "negative", "open-minded", "chill", "sarcastic", "serious", "playful", "goofy",
    "careful", "careless", "punctual", "responsible", "moody", "bold", "brave", "timid",
];

/// Trait nouns ("I'm an introvert").
pub(super) const EN_TRAIT_NOUNS: &[&str] = &[
    "introvert", "extrovert", "extravert", "ambivert", "perfectionist", "optimist",
    "pessimist", "realist", "idealist", "dreamer", "workaholic", "nerd", "geek", "homebody",
    "procrastinator", "people person", "overthinker", "loner", "romantic", "free spirit",
];

/// Diets and rhythms that read as habits ("I'm a vegetarian", "I'm a night owl").
pub(super) const EN_HABIT_NOUNS: &[&str] = &[
    "vegetarian", "vegan", "pescatarian", "night owl", "early bird", "early riser",
    "morning person", "night person", "non-smoker", "smoker", "teetotaler",
];

/// Family members (the word after "my").
pub(super) const EN_FAMILY: &[&str] = &[
    "mom", "mother", "mum", "mommy", "mama", "dad", "father", "daddy", "papa", "parents",
    "parent", "sister", "sisters", "brother", "brothers", "sibling", "siblings", "son", "sons",
    "daughter", "daughters", "kid", "kids", "child", "children", "baby", "husband", "wife",
    "grandma", "grandmother", "grandpa", "grandfather", "grandparents", "granny", "aunt",
    "uncle", "cousin", "cousins", "niece", "nephew", "family", "stepmom", "stepdad",
    "stepmother", "stepfather", "in-laws", "twin", "grandson", "granddaughter",
    "grandchildren", "grandkids", "mother-in-law", "father-in-law", "spouse", "folks",
];

/// Partners, friends and colleagues (the word after "my").
pub(super) const EN_RELATIONS: &[&str] = &[
    "friend", "friends", "bff", "bestie", "boyfriend", "girlfriend", "partner", "fiance",
    "fiancé", "fiancee", "fiancée", "ex", "roommate", "roommates", "flatmate", "coworker",
    "coworkers", "co-worker", "co-workers", "colleague", "colleagues", "boss", "neighbor",
    "neighbors", "neighbour", "neighbours", "classmate", "classmates", "mentor", "buddy",
    "buddies", "pal", "crush", "teammate", "teammates", "bf", "gf",
];

/// Marital and dating states ("I'm married", "I'm single").
pub(super) const EN_RELATION_STATES: &[&str] = &[
    "married", "single", "engaged", "divorced", "widowed", "separated", "dating",
];

/// Animals people keep.
pub(super) const EN_PETS: &[&str] = &[
    "dog", "dogs", "puppy", "puppies", "pup", "cat", "cats", "kitten", "kittens", "kitty",
    "hamster", "hamsters", "rabbit", "rabbits", "bunny", "bunnies", "parrot", "parrots",
    "bird", "birds", "fish", "goldfish", "turtle", "turtles", "tortoise", "snake", "lizard",
    "gecko", "horse", "horses", "pony", "ferret", "hedgehog", "chinchilla", "budgie",
    "cockatiel", "canary", "iguana", "pet", "pets", "pig", "goat", "chickens", "chicken",
    "guinea",
];

/// Verbs whose "to"-infinitive is talk about the conversation, not a plan ("I want to say").
pub(super) const EN_SPEECH_VERBS: &[&str] = &[
    "say", "know", "thank", "tell", "ask", "share", "let", "apologize", "apologise", "hear",
    "talk", "mention", "remind", "add", "point", "bed", "sleep", "cry", "scream", "the", "a",
    "an", "my", "your", "you", "it", "that", "this", "do", "help", "hug", "kiss", "thank",
];

/// Words that end a value ("I love hiking because …" → "hiking").
pub(super) const EN_CUT_WORDS: &[&str] = &[
    "because", "cause", "cuz", "coz", "cos", "since", "but", "although", "though", "while",
    "whereas", "which", "unless", "if", "when", "whenever", "so", "lol", "haha", "hahaha",
    "lmao", "tbh", "btw", "whilst", "until", "till", "—", "-", "&",
];

/// Words that end a value when they start a new clause with a subject ("… and I went").
pub(super) const EN_SUBJECTS: &[&str] = &[
    "i", "it", "that", "we", "he", "she", "they", "you", "there", "this", "its",
];

/// Trailing words dropped from a value ("I live in Boston now" → "Boston").
pub(super) const EN_TRAILING: &[&str] = &[
    "too", "now", "also", "anymore", "though", "either", "lol", "haha", "really", "tho",
    "honestly", "actually", "already", "btw", "again", "then", "currently", "still", "here",
    "there", "much", "a", "an", "the", "and", "or", "of", "to", "with", "my", "for", "in",
    "at", "on", "very", "well", "nowadays", "lately",
];

/// Pairs that end a value ("so much", "a lot", "right now").
pub(super) const EN_CUT_PAIRS: &[(&str, &str)] = &[
    ("a", "lot"),
    ("so", "much"),
    ("very", "much"),
    ("right", "now"),
    ("these", "days"),
    ("for", "now"),
    ("as", "well"),
    ("at", "the"),
    ("for", "a"),
    ("for", "the"),
    ("for", "years"),
    ("for", "months"),
];

/// Words skipped between the parts of a pattern ("I really love", "I'm currently living").
pub(super) const EN_FILLERS: &[&str] = &[
    "really", "also", "just", "actually", "still", "currently", "totally", "absolutely",
    "truly", "honestly", "definitely", "seriously", "genuinely", "personally", "originally",
    "recently", "now", "so", "very", "pretty", "quite", "super", "kinda", "sorta", "too",
    "always", "already", "literally", "mostly", "mainly", "finally", "officially", "even",
];

/// Words before "I" that make the clause hypothetical or reported, not a statement.
pub(super) const EN_HYPOTHETICAL: &[&str] = &[
    "if", "unless", "whether", "wish", "suppose", "imagine", "pretend", "hope", "wonder",
    "maybe", "perhaps", "think", "guess", "bet", "dreamed", "dreamt", "whenever", "when", "once",
];

/// Frequency words that mark a habit.
pub(super) const EN_FREQUENCY: &[&str] = &[
    "usually", "always", "often", "normally", "regularly", "typically", "generally", "never",
    "rarely", "frequently", "seldom", "sometimes", "occasionally",
];

/// Periods after "every"/"each" that mark a habit.
pub(super) const EN_PERIODS: &[&str] = &[
    "day", "morning", "night", "evening", "afternoon", "week", "weekend", "month", "year",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "summer",
    "winter", "spring", "fall", "autumn", "christmas", "weekday", "day,",
];

/// Verbs after a frequency word that are feelings, not routines ("I always love …").
pub(super) const EN_NOT_ROUTINE: &[&str] = &[
    "love", "like", "enjoy", "hate", "think", "feel", "felt", "wanted", "want", "knew", "know",
    "forget", "wonder", "wondered", "thought", "believe", "have", "had", "am", "was", "do",
    "did", "appreciate", "remember", "miss",
];

/// Chinese occupations (whole words).
pub(super) const ZH_JOBS: &[&str] = &[
    "老师", "教师", "医生", "护士", "律师", "工程师", "程序员", "设计师", "会计", "学生",
    "大学生", "研究生", "博士生", "高中生", "初中生", "小学生", "中学生", "警察", "消防员",
    "厨师", "司机", "记者", "编辑", "作家", "画家", "歌手", "演员", "模特", "主播", "博主",
    "摄影师", "经理", "老板", "店长", "销售", "客服", "公务员", "军人", "农民", "工人", "商人",
    "教授", "科学家", "研究员", "分析师", "产品经理", "运营", "翻译", "导游", "快递员",
    "外卖员", "服务员", "保安", "保姆", "理发师", "化妆师", "教练", "飞行员", "空姐", "空乘",
    "实习生", "自由职业者", "全职妈妈", "家庭主妇", "上班族", "打工人", "社畜", "码农",
    "艺术家", "音乐家", "舞蹈家", "钢琴家", "心理咨询师", "药剂师", "兽医", "牙医", "电工",
    "木匠", "建筑师", "秘书", "助理", "销售员", "营业员", "收银员", "主持人", "导演",
    "制片人", "画师", "插画师", "漫画家", "作者", "写手", "网红", "选手", "运动员", "医学生",
    "学者", "志愿者", "创业者", "总监", "主管", "职员", "员工", "前端", "后端", "会计师",
];

/// Suffixes that make a Chinese occupation ("…师", "…员").
pub(super) const ZH_JOB_SUFFIXES: &[&str] = &[
    "师", "员", "生", "家", "手", "工", "匠", "官", "长", "士", "警", "者", "经理", "主播",
];

/// Words with a job suffix that are not jobs.
pub(super) const ZH_NOT_JOBS: &[&str] = &[
    "先生", "陌生", "大家", "人家", "回家", "在家", "老家", "自家", "娘家", "婆家", "新手",
    "高手", "对手", "家长", "女士", "男士", "人士", "或者", "患者", "读者", "一生", "此生",
    "学生会", "爱好者", "一家", "我家", "长长", "成长", "学长", "师长", "校友", "老长",
    "这家", "那家", "全家", "小生", "后生", "众生", "出生", "医生家",
];

/// Chinese gender words.
pub(super) const ZH_GENDER: &[&str] = &[
    "男孩子", "女孩子", "小伙子", "小姑娘", "男生", "女生", "男孩", "女孩", "男人", "女人",
    "男的", "女的", "男性", "女性", "姑娘", "妹子", "汉子", "跨性别者",
];

/// Chinese character traits.
pub(super) const ZH_TRAITS: &[&str] = &[
    "完美主义", "好奇心强", "脾气暴躁", "脾气不好", "脾气好", "没耐心", "强迫症", "拖延症",
    "内向", "外向", "害羞", "开朗", "乐观", "悲观", "急躁", "暴躁", "耐心", "细心", "粗心",
    "认真", "固执", "温柔", "善良", "幽默", "安静", "话多", "话少", "社恐", "社牛", "慢热",
    "随和", "独立", "敏感", "胆小", "大方", "小气", "自律", "懒散", "冷静", "冲动", "感性",
    "理性", "佛系", "要强", "好强", "倔强", "直率", "单纯", "腼腆", "活泼", "热情", "冷淡",
    "高冷", "自卑", "自信", "坚强", "心软", "路痴", "吃货", "懒", "宅", "腹黑", "傲娇",
    "靠谱", "马虎", "大大咧咧", "毒舌", "念旧", "恋旧", "较真", "爱哭", "好动", "好静",
];

/// Chinese family members, longest first so "妈妈" wins over "妈".
pub(super) const ZH_FAMILY: &[&str] = &[
    "外公", "外婆", "姥姥", "姥爷", "爷爷", "奶奶", "爸爸", "妈妈", "老爸", "老妈", "爸妈",
    "父母", "父亲", "母亲", "哥哥", "姐姐", "弟弟", "妹妹", "儿子", "女儿", "孩子", "老公",
    "老婆", "丈夫", "妻子", "爱人", "家人", "叔叔", "阿姨", "舅舅", "姑姑", "表哥", "表姐",
    "表妹", "表弟", "堂哥", "堂姐", "堂妹", "堂弟", "孙子", "孙女", "侄子", "侄女", "外甥",
    "婆婆", "公公", "岳父", "岳母", "家里人", "双胞胎", "爸", "妈", "哥", "姐", "弟", "妹",
];

/// Chinese partners, friends and colleagues, longest first.
pub(super) const ZH_RELATIONS: &[&str] = &[
    "前男友", "前女友", "男朋友", "女朋友", "好朋友", "未婚夫", "未婚妻", "男友", "女友",
    "对象", "前任", "朋友", "好友", "闺蜜", "兄弟", "哥们", "同事", "老板", "上司", "领导",
    "室友", "舍友", "同学", "邻居", "老师", "师父", "师傅", "导师", "徒弟", "学生", "网友",
    "发小", "队友", "搭档", "恋人", "情人", "暗恋对象",
];

/// Relationship states said of oneself ("我结婚了", "我单身").
pub(super) const ZH_RELATION_STATES: &[&str] = &[
    "结婚了", "已婚", "单身", "离婚了", "离婚", "离异", "恋爱了", "脱单了", "订婚了",
    "谈恋爱了", "在谈恋爱", "有男朋友", "有女朋友", "有对象", "有老公", "有老婆",
];

/// Animals people keep.
pub(super) const ZH_PETS: &[&str] = &[
    "猫咪", "小猫", "狗狗", "小狗", "金鱼", "乌龟", "兔子", "仓鼠", "鹦鹉", "小鸟", "蜥蜴",
    "龙猫", "刺猬", "柯基", "哈士奇", "金毛", "泰迪", "柴犬", "布偶", "英短", "橘猫",
    "宠物", "豚鼠", "猫", "狗", "鱼", "鸟", "蛇", "龟", "兔",
];

/// Words after "我" that change nothing for the rules ("我也", "我其实").
pub(super) const ZH_FILLERS: &[&str] = &[
    "其实", "确实", "本来", "一直", "现在", "目前", "已经", "真心", "还是", "倒是", "总算",
    "终于", "刚刚", "今年", "也", "还", "都", "就", "又", "可", "刚", "才", "快", "正在", "正",
    "是真的",
];

/// Intensifiers, dropped from personality values.
pub(super) const ZH_INTENSIFIERS: &[&str] = &[
    "超级", "非常", "特别", "十分", "相当", "真的", "还挺", "挺", "很", "超", "真", "太", "蛮",
    "最", "好", "巨", "贼", "比较", "更",
];

/// Hedges kept in personality values ("有点内向").
pub(super) const ZH_HEDGES: &[&str] = &["有点儿", "有一点", "有点", "有些", "稍微", "略"];

/// Negations, longest first.
pub(super) const ZH_NEGATIONS: &[&str] = &[
    "一点也不", "一点都不", "从来不", "从来没", "不怎么", "并不", "并没", "从不", "不太", "没有",
    "不是很", "不", "没", "别",
];

/// Past markers ("我以前住在北京").
pub(super) const ZH_PAST: &[&str] = &[
    "小时候", "那时候", "以前", "之前", "曾经", "过去", "原来", "当年", "曾",
];

/// Frequency words that mark a habit.
pub(super) const ZH_FREQUENCY: &[&str] = &[
    "每天早上", "每天晚上", "每个周末", "每个月", "每周末", "每星期", "每天", "每周", "每晚",
    "每早", "每年", "每次", "天天", "经常", "总是", "通常", "一般", "平时", "平常", "常常",
    "老是", "从不", "从来不", "习惯了", "习惯", "向来", "往往",
];

/// Time words that mark a plan ("我明年要…").
pub(super) const ZH_FUTURE: &[&str] = &[
    "下个星期", "下个月", "下星期", "毕业以后", "毕业后", "过几天", "这周末", "下周", "明天",
    "后天", "明年", "以后", "将来", "未来", "今晚", "年底", "暑假", "寒假", "周末", "马上",
];

/// Words that end a Chinese value ("我喜欢爬山因为…" → "爬山").
pub(super) const ZH_CUT_WORDS: &[&str] = &[
    "因为", "所以", "但是", "可是", "不过", "然后", "而且", "虽然", "如果", "要是", "只是",
    "就是说", "哈哈", "呵呵", "嘻嘻", "我",
];

/// Particles and marks trimmed from the end of a Chinese value.
pub(super) const ZH_TRAILING: &[char] = &[
    '了', '啊', '呀', '呢', '吧', '哦', '喔', '啦', '嘛', '哈', '哟', '呐', '诶', '欸', '噢',
    '的', '哇', '~', '～', '呗', '滴', '嗯', '耶',
];

/// Pronouns: a like or plan whose object is one is about the listener, not a preference.
pub(super) const ZH_PRONOUNS: &[&str] = &["你", "您", "他", "她", "它", "自己", "大家"];

/// Measure words before a noun ("一只", "两个").
pub(super) const ZH_MEASURES: &[&str] = &[
    "一个", "一名", "一位", "一只", "一条", "一头", "一匹", "一枚", "个", "名", "位", "只",
    "条", "头", "匹", "枚",
];
