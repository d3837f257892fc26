//! Built-in stopword lists.
//!
//! English: the Snowball English list (which already includes the contractions, written with an
//! ASCII apostrophe because the analyzer folds ’ and ʼ to '), plus a few extremely common chat
//! fillers and the apostrophe-less contractions people type in chat. Words that double as names
//! ("will", "may") are deliberately absent.
//!
//! Chinese: particles, conjunctions, prepositions, demonstratives, question words and personal
//! pronouns. Pronouns are included because nearly every chat utterance contains 我/你, so they
//! carry no retrieval signal; the surrounding content words do.

#[rustfmt::skip]
pub(crate) const ENGLISH: &[&str] = &[
    // Snowball English stop list.
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours",
    "yourself", "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself",
    "it", "its", "itself", "they", "them", "their", "theirs", "themselves", "what", "which",
    "who", "whom", "this", "that", "these", "those", "am", "is", "are", "was", "were", "be",
    "been", "being", "have", "has", "had", "having", "do", "does", "did", "doing", "would",
    "should", "could", "ought", "i'm", "you're", "he's", "she's", "it's", "we're", "they're",
    "i've", "you've", "we've", "they've", "i'd", "you'd", "he'd", "she'd", "we'd", "they'd",
    "i'll", "you'll", "he'll", "she'll", "we'll", "they'll", "isn't", "aren't", "wasn't",
    "weren't", "hasn't", "haven't", "hadn't", "doesn't", "don't", "didn't", "won't", "wouldn't",
    "shan't", "shouldn't", "can't", "cannot", "couldn't", "mustn't", "let's", "that's", "who's",
    "what's", "here's", "there's", "when's", "where's", "why's", "how's", "a", "an", "the",
    "and", "but", "if", "or", "because", "as", "until", "while", "of", "at", "by", "for", "with",
    "about", "against", "between", "into", "through", "during", "before", "after", "above",
    "below", "to", "from", "up", "down", "in", "out", "on", "off", "over", "under", "again",
    "further", "then", "once", "here", "there", "when", "where", "why", "how", "all", "any",
    "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor", "not", "only",
    "own", "same", "so", "than", "too", "very",
    // Common extras (NLTK) that carry no topic.
    "can", "just", "now",
    // Contractions typed without the apostrophe (none of these is an ordinary word).
    "dont", "doesnt", "didnt", "isnt", "arent", "wasnt", "werent", "hasnt", "havent", "hadnt",
    "wouldnt", "shouldnt", "couldnt", "mustnt", "im", "ive", "youre", "youve", "youll", "youd",
    "theyre", "theyve", "thats", "whats",
];

#[rustfmt::skip]
pub(crate) const CHINESE: &[&str] = &[
    // Structural and aspect particles.
    "的", "地", "得", "了", "着", "过", "之", "所",
    // Sentence-final particles and interjections.
    "吗", "呢", "吧", "啊", "呀", "哦", "嗯", "哈", "哈哈", "啦", "嘛", "哎", "唉", "喔", "噢",
    "呃", "哇", "么",
    // Copula, existence, negation, degree.
    "是", "有", "没有", "没", "不", "很", "太", "挺", "非常", "都", "也", "还", "又", "再", "就",
    "才", "只",
    // Pronouns.
    "我", "你", "您", "他", "她", "它", "我们", "你们", "他们", "她们", "它们", "咱们", "咱", "们",
    "自己",
    // Demonstratives.
    "这", "那", "这个", "那个", "这些", "那些", "这样", "那样", "这么", "那么", "这里", "那里",
    // Conjunctions.
    "和", "与", "及", "跟", "或", "或者", "而", "而且", "并", "并且", "但", "但是", "可是", "然而",
    "因为", "所以", "如果", "虽然",
    // Prepositions and the passive/disposal markers.
    "在", "被", "把", "让", "给", "对", "从", "向", "往", "到", "于", "以", "为", "为了", "等",
    // Measure word and quantity fillers.
    "个", "一个", "一些", "一下",
    // Question words.
    "什么", "怎么", "怎样", "哪", "哪里", "哪儿", "哪个", "谁", "为什么", "多少", "几",
    // Modal verbs.
    "会", "能", "可以", "应该",
    // Light verbs that carry no topic on their own ("做什么", "弄一下", "搞好").
    "做", "弄", "搞",
];
