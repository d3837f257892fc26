//! Chinese lines and what they state.

use super::super::Slot::{self, *};
use super::Case;

#[rustfmt::skip]
pub(in crate::statements) const STATEMENTS: &[Case] = &[
    // Residence.
    ("对了，我现在住在洛阳。", "me", Residence, "", "洛阳", false),
    ("我刚搬完家，现在住在厦门了。", "me", Residence, "", "厦门", false),
    ("我住在上海的一个小公寓里。", "me", Residence, "", "上海", false),
    ("我住在北京已经三年了。", "me", Residence, "", "北京", false),
    ("我搬到杭州市西湖区了。", "me", Residence, "", "杭州市西湖区", false),
    ("我们上个月搬到了深圳。", "me", Residence, "", "深圳", false),
    ("我已经不住在北京了。", "me", Residence, "", "北京", true),
    ("我家在成都。", "me", Residence, "", "成都", false),
    ("我以前住在北京，现在住在成都。", "me", Residence, "", "成都", false),
    ("我在苏州生活了五年。", "me", Residence, "", "苏州", false),
    ("我姐姐住在广州。", "rel:姐姐", Residence, "", "广州", false),
    ("我妈搬回了武汉。", "rel:妈", Residence, "", "武汉", false),
    ("去年我们移民到了加拿大。", "me", Residence, "", "加拿大", false),
    ("我搬离了上海。", "me", Residence, "", "上海", true),
    ("我现在定居在大理。", "me", Residence, "", "大理", false),
    ("搬到南京了！", "me", Residence, "", "南京", false),
    ("我住成都。", "me", Residence, "", "成都", false),
    // Employer.
    ("我在腾讯上班。", "me", Employer, "", "腾讯", false),
    ("我哥在腾讯上班。", "rel:哥", Employer, "", "腾讯", false),
    ("我跳槽到字节跳动了。", "me", Employer, "", "字节跳动", false),
    ("我入职了一家创业公司。", "me", Employer, "", "创业公司", false),
    ("我在一家银行工作。", "me", Employer, "", "银行", false),
    ("我上周加入了阿里巴巴。", "me", Employer, "", "阿里巴巴", false),
    ("我已经不在华为上班了。", "me", Employer, "", "华为", true),
    ("我从百度离职了。", "me", Employer, "", "百度", true),
    ("我辞职了。", "me", Employer, "", "", true),
    ("我在阿里巴巴当产品经理。", "me", Employer, "", "阿里巴巴", false),
    ("我在Google工作。", "me", Employer, "", "Google", false),
    ("我老公在医院上班。", "rel:老公", Employer, "", "医院", false),
    // Job.
    ("我上个月换工作了，现在是一名锁匠。", "me", Job, "", "锁匠", false),
    ("我现在是一名空中交通管制员。", "me", Job, "", "空中交通管制员", false),
    ("我是老师。", "me", Job, "", "老师", false),
    ("我成为了一名律师。", "me", Job, "", "律师", false),
    ("我转行做设计师了。", "me", Job, "", "设计师", false),
    ("我不再当老师了。", "me", Job, "", "老师", true),
    ("我已经不是护士了。", "me", Job, "", "护士", true),
    ("我在阿里巴巴当产品经理。", "me", Job, "", "产品经理", false),
    ("我在医院当护士。", "me", Job, "", "护士", false),
    ("我的职业是程序员。", "me", Job, "", "程序员", false),
    ("我现在做销售。", "me", Job, "", "销售", false),
    ("我退休了。", "me", Job, "", "退休", false),
    ("我妈妈是医生。", "rel:妈妈", Job, "", "医生", false),
    ("我升职为部门经理了。", "me", Job, "", "部门经理", false),
    // Relationship status and partner.
    ("我单身。", "me", RelationshipStatus, "", "单身", false),
    ("我结婚了！", "me", RelationshipStatus, "", "结婚", false),
    ("我们订婚了。", "me", RelationshipStatus, "", "订婚", false),
    ("我离婚了。", "me", RelationshipStatus, "", "离婚", false),
    ("我不是单身了。", "me", RelationshipStatus, "", "单身", true),
    ("我有对象了。", "me", RelationshipStatus, "", "恋爱", false),
    ("我还没结婚。", "me", RelationshipStatus, "", "结婚", true),
    ("我们分手了。", "me", Partner, "", "", true),
    ("我和小红分手了。", "me", Partner, "", "小红", true),
    ("我和小红分手了。", "me", RelationshipStatus, "", "单身", false),
    ("我对象叫李娜。", "me", Partner, "", "李娜", false),
    ("我女朋友叫小雨。", "me", Partner, "", "小雨", false),
    ("我老公是王强。", "me", Partner, "", "王强", false),
    ("我和张伟在一起了。", "me", Partner, "", "张伟", false),
    ("我和张伟在一起了。", "me", RelationshipStatus, "", "恋爱", false),
    ("我嫁给了李明。", "me", Partner, "", "李明", false),
    // Children.
    ("我儿子叫小明。", "me", Child, "儿子", "小明", false),
    ("我女儿的名字叫朵朵。", "me", Child, "女儿", "朵朵", false),
    ("我们给孩子取名叫乐乐。", "me", Child, "孩子", "乐乐", false),
    ("我家宝宝叫豆豆。", "me", Child, "孩子", "豆豆", false),
    // Pets.
    ("我家的猫叫芝麻糊。", "me", Pet, "猫", "芝麻糊", false),
    ("我们给猫改了名字，现在叫它小橘灯。", "me", Pet, "猫", "小橘灯", false),
    ("我养了一只狗叫旺财。", "me", Pet, "狗", "旺财", false),
    ("我的狗狗名叫豆包。", "me", Pet, "狗", "豆包", false),
    ("我不再养猫了。", "me", Pet, "猫", "", true),
    ("我家的猫咪叫咪咪。", "me", Pet, "猫", "咪咪", false),
    ("我们家的兔子叫雪球。", "me", Pet, "兔子", "雪球", false),
    ("我家的狗走了。", "me", Pet, "狗", "", true),
    // Preferences and likes.
    ("我最喜欢喝乌龙茶。", "me", Preference, "饮料", "乌龙茶", false),
    ("我最喜欢的饮料是冰美式。", "me", Preference, "饮料", "冰美式", false),
    ("我现在最喜欢的颜色是蓝色。", "me", Preference, "颜色", "蓝色", false),
    ("我最爱吃火锅。", "me", Preference, "食物", "火锅", false),
    ("抹茶拿铁是我最喜欢的饮料。", "me", Preference, "饮料", "抹茶拿铁", false),
    ("我最喜欢的歌手是周杰伦。", "me", Preference, "歌手", "周杰伦", false),
    ("我喜欢爬山。", "me", Likes, "", "爬山", false),
    ("我不再喜欢咖啡了。", "me", Likes, "", "咖啡", true),
    ("我讨厌香菜。", "me", Likes, "", "香菜", true),
    ("我迷上了滑雪。", "me", Likes, "", "滑雪", false),
    // Diet.
    ("我吃素。", "me", Diet, "", "吃素", false),
    ("我已经不吃肉了。", "me", Diet, "", "吃肉", true),
    ("我是素食者。", "me", Diet, "", "素食者", false),
    ("我开始吃素了。", "me", Diet, "", "吃素", false),
    ("我又开始吃肉了。", "me", Diet, "", "吃肉", false),
    ("我戒肉了。", "me", Diet, "", "吃肉", true),
    ("我不再吃素了。", "me", Diet, "", "吃素", true),
    // Plans.
    ("我打算明年春天去新疆旅行。", "me", Plan, "旅行 明年 春天", "新疆", false),
    ("我打算明年去云南。", "me", Plan, "旅行 明年", "云南", false),
    ("明年春天的旅行改去云南了。", "me", Plan, "旅行 明年 春天", "云南", false),
    ("我们计划五一去日本玩。", "me", Plan, "五一 旅行", "日本", false),
    ("我下个月要搬到上海。", "me", Plan, "下个月 搬家", "上海", false),
    ("蜜月我们决定去巴厘岛。", "me", Plan, "旅行 蜜月", "巴厘岛", false),
    ("我准备暑假去西藏。", "me", Plan, "旅行 暑假", "西藏", false),
    // Quantities.
    ("为了保持身材，我每周跑17公里。", "me", Quantity, "公里 周 跑", "17公里", false),
    ("现在每周跑42公里。", "me", Quantity, "公里 周 跑", "42公里", false),
    ("我每周跑四十二公里。", "me", Quantity, "公里 周 跑", "四十二公里", false),
    ("我每天睡7个小时。", "me", Quantity, "天 小时 睡", "7个小时", false),
    ("我每个月读3本书。", "me", Quantity, "书 月 本 读", "3本书", false),
    ("我月薪两万。", "me", Quantity, "工资 月", "两万", false),
    ("我的房租每月3000元。", "me", Quantity, "房租 月", "3000元", false),
    ("我有两个孩子。", "me", Quantity, "孩子", "两个孩子", false),
    ("一杯咖啡要30块。", "me", Quantity, "价格 咖啡", "30块", false),
    ("我每天喝三杯咖啡。", "me", Quantity, "咖啡 喝 天 杯", "三杯咖啡", false),
    // Age.
    ("我今年二十八岁。", "me", Age, "", "二十八岁", false),
    ("我今年28岁。", "me", Age, "", "28岁", false),
    ("我刚满30岁。", "me", Age, "", "30岁", false),
    ("我儿子五岁了。", "rel:儿子", Age, "", "五岁", false),
    ("我今年二十八。", "me", Age, "", "二十八", false),
    // Dates.
    ("会议改到周四了。", "thing:会议", Date, "", "周四", false),
    ("我的牙医预约在周三。", "thing:牙医预约", Date, "", "周三", false),
    ("面试定在下周一上午十点。", "thing:面试", Date, "", "下周一上午十点", false),
    ("婚礼定在5月3号。", "thing:婚礼", Date, "", "5月3号", false),
    ("周会推迟到星期五了。", "thing:周会", Date, "", "星期五", false),
    ("我把体检改到明天了。", "thing:体检", Date, "", "明天", false),
    // Project status.
    ("项目进入了测试阶段。", "thing:项目", Status, "", "测试阶段", false),
    ("项目现在处于规划阶段。", "thing:项目", Status, "", "规划阶段", false),
    ("阿波罗项目已经上线了。", "thing:阿波罗项目", Status, "", "上线", false),
    ("我们的新项目暂停了。", "thing:新项目", Status, "", "暂停", false),
    ("装修已经完成了。", "thing:装修", Status, "", "完成", false),
    // Roles.
    ("张伟是腾讯的CEO。", "name:腾讯", Role, "ceo", "张伟", false),
    ("腾讯的CEO是张伟。", "name:腾讯", Role, "ceo", "张伟", false),
    ("公司新任总经理是李明。", "thing:公司", Role, "总经理", "李明", false),
    ("王芳接任了公司的总经理。", "thing:公司", Role, "总经理", "王芳", false),
    ("阿里巴巴任命王芳为新的CTO。", "name:阿里巴巴", Role, "cto", "王芳", false),
    ("李强卸任了华为的董事长。", "name:华为", Role, "董事长", "李强", true),
    // Headquarters.
    ("公司总部搬到了深圳。", "thing:公司", Headquarters, "", "深圳", false),
    ("腾讯总部在深圳。", "name:腾讯", Headquarters, "", "深圳", false),
    ("我们公司的总部迁到了杭州。", "thing:公司", Headquarters, "", "杭州", false),
    ("小米把总部搬到了武汉。", "name:小米", Headquarters, "", "武汉", false),
];

/// Lines that state nothing about the speaker.
#[rustfmt::skip]
pub(in crate::statements) const NOT_THE_SPEAKER: &[&str] = &[
    // Questions.
    "你住在哪里？",
    "你是不是搬家了？",
    "你还在腾讯上班吗？",
    "你是老师吗",
    "我是不是应该搬到上海？",
    "你家的猫叫什么？",
    // Hypotheticals.
    "如果我搬到巴黎，我就学法语。",
    "假如我住在上海，就方便多了。",
    "我在考虑搬去成都。",
    "也许我会去成都。",
    "要是我是老师就好了。",
    "我想搬到大理。",
    "我可能会跳槽到阿里。",
    "我希望以后住在海边。",
    "万一我失业了怎么办",
    "我梦见我住在城堡里。",
    // Reported and quoted speech.
    "他说他搬到了巴黎。",
    "她跟我说“我现在住在上海”。",
    "听说他在腾讯上班。",
    "我妈说我是个好厨师。",
    "据说老板要搬到深圳。",
    "他告诉我他结婚了。",
    // Other people's facts.
    "我哥在腾讯上班。",
    "他住在北京。",
    "她是一名护士。",
    "张伟搬到了上海。",
    // Past.
    "我以前住在北京。",
    "我之前在百度上班。",
    "我小时候住在农村。",
    "我在北京住过两年。",
    "我曾经是一名老师。",
    "我原来是做销售的。",
];

/// Lines that state nothing at all.
#[rustfmt::skip]
pub(in crate::statements) const NOTHING: &[&str] = &[
    "住在大城市很辛苦。",
    "护士的工作时间很长。",
    "巴黎的春天很美。",
    "今天天气不错。",
    "谢谢你的建议！",
    "我在北京工作。",
    "我喜欢你。",
    "哈哈哈",
    "你住在哪里？",
    "如果我搬到巴黎，我就学法语。",
];

#[rustfmt::skip]
pub(in crate::statements) const UPDATES: &[(&str, &str)] = &[
    ("对了，我现在住在洛阳。", "我刚搬完家，现在住在厦门了。"),
    ("我是一名护士。", "我上个月换工作了，现在是一名锁匠。"),
    ("我家的猫叫芝麻糊。", "我们给猫改了名字，现在叫它小橘灯。"),
    ("为了保持身材，我每周跑17公里。", "现在每周跑42公里。"),
    ("我最喜欢的饮料是冰美式。", "我最喜欢喝乌龙茶。"),
    ("我打算明年春天去新疆旅行。", "明年春天的旅行改去云南了。"),
    ("会议定在周三。", "会议改到周四了。"),
    ("项目现在处于规划阶段。", "项目进入了测试阶段。"),
    ("腾讯的CEO是张伟。", "腾讯任命李明为新的CEO。"),
    ("我在腾讯上班。", "我跳槽到字节跳动了。"),
    ("我今年28岁。", "我今年二十九岁。"),
];

/// (line, wrong, right)
#[rustfmt::skip]
pub(in crate::statements) const CORRECTIONS: &[(&str, Option<&str>, &str)] = &[
    ("不是周三，是周四", Some("周三"), "周四"),
    ("改成周四", None, "周四"),
    ("我说错了，是周四", None, "周四"),
    ("那就改成周五吧", None, "周五"),
    ("是上海，不是北京", Some("北京"), "上海"),
    ("不对，应该是下午三点", None, "下午三点"),
    ("不是厦门而是福州", Some("厦门"), "福州"),
];

#[rustfmt::skip]
pub(in crate::statements) const NOT_CORRECTIONS: &[&str] = &[
    "会议改到周四了。",
    "我住在上海。",
    "要不要改成周四？",
];

/// (question, subject, slot, qualifier)
#[rustfmt::skip]
pub(in crate::statements) const ASKED: &[(&str, &str, Slot, &str)] = &[
    ("我现在住在哪个城市？", "me", Residence, ""),
    ("我住哪？", "me", Residence, ""),
    ("项目现在到哪个阶段了？", "thing:项目", Status, ""),
    ("我每周跑多少公里？", "me", Quantity, "公里 周 跑"),
    ("我家的猫叫什么？", "me", Pet, "猫"),
    ("我在哪上班？", "me", Employer, ""),
    ("我哥在哪家公司工作？", "rel:哥", Employer, ""),
    ("我是做什么工作的？", "me", Job, ""),
    ("腾讯的CEO是谁？", "name:腾讯", Role, "ceo"),
    ("谁是公司的总经理？", "thing:公司", Role, "总经理"),
    ("会议是什么时候？", "thing:会议", Date, ""),
    ("我最喜欢喝什么？", "me", Preference, "饮料"),
    ("我今年多大了？", "me", Age, ""),
    ("我结婚了吗？", "me", RelationshipStatus, ""),
    ("我对象叫什么？", "me", Partner, ""),
    ("我儿子叫什么名字？", "me", Child, "儿子"),
    ("我明年春天打算去哪？", "me", Plan, "旅行 明年 春天"),
    ("腾讯总部在哪？", "name:腾讯", Headquarters, ""),
    ("我月薪多少？", "me", Quantity, "工资 月"),
    ("我吃素吗？", "me", Diet, ""),
];

#[rustfmt::skip]
pub(in crate::statements) const ASKED_NOTHING: &[&str] = &[
    "今天天气怎么样？",
    "你好吗？",
    "能推荐一本书吗？",
    "我住在上海。",
];

#[rustfmt::skip]
pub(in crate::statements) const ASKED_MATCHES: &[(&str, &str)] = &[
    ("我每周跑多少公里？", "现在每周跑42公里。"),
    ("我最喜欢喝什么？", "我最喜欢的饮料是冰美式。"),
    ("我明年春天打算去哪？", "明年春天的旅行改去云南了。"),
    ("我家的猫叫什么？", "我们给猫改了名字，现在叫它小橘灯。"),
    ("我月薪多少？", "我月薪两万。"),
];
