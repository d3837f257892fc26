//! Lines written apart from the probes' templates, in constructions the first cases did not
//! use: what a statement rule must generalize to. Not read yet (left for a broader reader):
//! "I'm working at a startup called Loomly" (the name after "called"), "We adopted a puppy and
//! called him Rocket", "We've since moved on from Austin to Raleigh", "我现在人在西安", "我恢复单身
//! 了", "我已经吃了三年素了", "我换工作了，现在在拼多多" (a dropped subject after a comma), "我下个
//! 月就31岁了", "Our son is a toddler named Arlo", "Next stop for us is Vietnam", "The website
//! relaunch is in testing", "我们家老大叫浩浩", "蜜月我们选了马尔代夫", "装修还在等审批", "我养了三只
//! 猫", "我的新东家是蔚来", "我当牙医十年了".

use super::super::Slot::*;
use super::Case;

#[rustfmt::skip]
pub(in crate::statements) const ENGLISH: &[Case] = &[
    ("These days I call Lisbon home.", "me", Residence, "", "Lisbon", false),
    ("I've settled in Kyoto for good.", "me", Residence, "", "Kyoto", false),
    ("Our new place is in Leeds.", "me", Residence, "", "Leeds", false),
    ("We ended up moving to Quebec City.", "me", Residence, "", "Quebec City", false),
    ("I just bought a house in Tucson.", "me", Residence, "", "Tucson", false),
    ("My employer is Siemens.", "me", Employer, "", "Siemens", false),
    ("I accepted an offer from Shopify.", "me", Employer, "", "Shopify", false),
    ("I got hired by Pfizer.", "me", Employer, "", "Pfizer", false),
    ("I quit Amazon last week.", "me", Employer, "", "Amazon", true),
    ("I'm working as a paramedic now.", "me", Job, "", "paramedic", false),
    ("My job title is data analyst.", "me", Job, "", "data analyst", false),
    ("I got promoted to senior editor.", "me", Job, "", "senior editor", false),
    ("I'm a freelance photographer these days.", "me", Job, "", "photographer", false),
    ("I'm no longer a cashier.", "me", Job, "", "cashier", true),
    ("I'm single again.", "me", RelationshipStatus, "", "single", false),
    ("I'm seeing a guy named Tomas.", "me", Partner, "", "Tomas", false),
    ("My fiancée is called Priya.", "me", Partner, "", "Priya", false),
    ("My boyfriend, Leo, is a chef.", "me", Partner, "", "Leo", false),
    ("We named our baby boy Felix.", "me", Child, "son", "Felix", false),
    ("My youngest daughter is Clara.", "me", Child, "daughter", "Clara", false),
    ("My cat goes by Noodle.", "me", Pet, "cat", "Noodle", false),
    ("Right now my favorite show is Severance.", "me", Preference, "show", "Severance", false),
    ("I'm vegetarian these days.", "me", Diet, "", "vegetarian", false),
    ("I went pescatarian in January.", "me", Diet, "", "pescatarian", false),
    ("I'm planning to visit Morocco in May.", "me", Plan, "may trip", "Morocco", false),
    ("I'm 29 now.", "me", Age, "", "29", false),
    ("Nordlicht Energy moved its headquarters to Hamburg.", "name:Nordlicht Energy", Headquarters, "", "Hamburg", false),
];

#[rustfmt::skip]
pub(in crate::statements) const CHINESE: &[Case] = &[
    ("我已经在青岛安家了。", "me", Residence, "", "青岛", false),
    ("我搬去了昆明。", "me", Residence, "", "昆明", false),
    ("我老家在湖南，现在在广州生活。", "me", Residence, "", "广州", false),
    ("我现在在美团工作。", "me", Employer, "", "美团", false),
    ("我被京东录用了。", "me", Employer, "", "京东", false),
    ("我去了小米上班。", "me", Employer, "", "小米", false),
    ("我的单位是中国银行。", "me", Employer, "", "中国银行", false),
    ("我离开了网易。", "me", Employer, "", "网易", true),
    ("我现在的工作是快递员。", "me", Job, "", "快递员", false),
    ("我当上了主任医师。", "me", Job, "", "主任医师", false),
    ("我改行当厨师了。", "me", Job, "", "厨师", false),
    ("我是做翻译的。", "me", Job, "", "翻译", false),
    ("我男朋友叫阿峰。", "me", Partner, "", "阿峰", false),
    ("我的未婚夫是李明。", "me", Partner, "", "李明", false),
    ("我们给儿子取名叫乐乐。", "me", Child, "儿子", "乐乐", false),
    ("我新养了一只狗，名字叫豆豆。", "me", Pet, "狗", "豆豆", false),
    ("我的猫咪叫团子。", "me", Pet, "猫", "团子", false),
    ("我现在最喜欢的电影是霸王别姬。", "me", Preference, "电影", "霸王别姬", false),
    ("明年春天我们打算去日本玩。", "me", Plan, "旅行 明年 春天", "日本", false),
    ("国庆我准备去云南旅游。", "me", Plan, "国庆 旅行", "云南", false),
    ("我今年刚满30岁。", "me", Age, "", "30岁", false),
    ("远航集团把总部迁到了深圳。", "name:远航集团", Headquarters, "", "深圳", false),
];

/// Updates and negations.
#[rustfmt::skip]
pub(in crate::statements) const CHANGES: &[Case] = &[
    // Chinese updates and negations.
    ("我们已经从成都搬到重庆了。", "me", Residence, "", "重庆", false),
    ("现在我住的地方换成了宁波。", "me", Residence, "", "宁波", false),
    ("我不在苏州住了。", "me", Residence, "", "苏州", true),
    ("我已经从字节离职了。", "me", Employer, "", "字节", true),
    ("我不干会计了。", "me", Job, "", "会计", true),
    ("我现在做产品经理了。", "me", Job, "", "产品经理", false),
    ("我和女朋友分手了，现在单身。", "me", RelationshipStatus, "", "单身", false),
    ("我们领证了！", "me", RelationshipStatus, "", "结婚", false),
    ("我女儿改名叫若溪了。", "me", Child, "女儿", "若溪", false),
    ("我家的猫改名叫奶茶了。", "me", Pet, "猫", "奶茶", false),
    ("我现在最喜欢的颜色是蓝色。", "me", Preference, "颜色", "蓝色", false),
    ("我不吃素了。", "me", Diet, "", "吃素", true),
    ("旅行计划变了，我们改去桂林。", "me", Plan, "旅行", "桂林", false),
    ("我每周跑步20公里。", "me", Quantity, "公里 周 跑", "20公里", false),
    ("项目现在进入测试阶段了。", "thing:项目", Status, "", "测试", false),
    ("星辰科技的CEO换成了赵磊。", "name:星辰科技", Role, "ceo", "赵磊", false),
    ("牙医预约改到了周五。", "thing:牙医预约", Date, "", "周五", false),
    // English updates and negations.
    ("I don't live in Denver anymore.", "me", Residence, "", "Denver", true),
    ("I left Google in the spring.", "me", Employer, "", "Google", true),
    ("I'm now at Stripe.", "me", Employer, "", "Stripe", false),
    ("I stopped working as a nurse.", "me", Job, "", "nurse", true),
    ("I switched careers and became an electrician.", "me", Job, "", "electrician", false),
    ("My daughter now goes by Jo.", "me", Child, "daughter", "Jo", false),
    ("We renamed the dog Pixel.", "me", Pet, "dog", "Pixel", false),
    ("I'm not vegan anymore.", "me", Diet, "", "vegan", true),
    ("My favourite food these days is ramen.", "me", Preference, "food", "ramen", false),
    ("My rent is now $2,100.", "me", Quantity, "month rent", "$2,100", false),
    ("The dentist appointment moved to Friday.", "thing:dentist appointment", Date, "", "Friday", false),
    ("The migration project is now complete.", "thing:migration project", Status, "", "complete", false),
    ("Corvane named Ada Brooks chief executive.", "name:Corvane", Role, "ceo", "Ada Brooks", false),
];

#[rustfmt::skip]
pub(in crate::statements) const SLOTS: &[Case] = &[
    ("My kid's name is Wren.", "me", Child, "child", "Wren", false),
    ("We call our daughter Bea.", "me", Child, "daughter", "Bea", false),
    ("My son goes by Teddy now.", "me", Child, "son", "Teddy", false),
    ("Our hamster is called Biscuit.", "me", Pet, "hamster", "Biscuit", false),
    ("I have a rabbit named Clover.", "me", Pet, "rabbit", "Clover", false),
    ("We booked flights to Cape Town for the holidays.", "me", Plan, "trip", "Cape Town", false),
    ("Our vacation this year will be in Crete.", "me", Plan, "trip year", "Crete", false),
    ("The summer trip is now going to Norway.", "me", Plan, "summer trip", "Norway", false),
    ("Phase two of the rollout has started.", "thing:rollout", Status, "", "started", false),
    ("I have 3 cats.", "me", Quantity, "cat", "3 cats", false),
    ("I sleep about seven hours a night.", "me", Quantity, "hour night sleep", "seven hours", false),
    ("I drink two coffees a day.", "me", Quantity, "coffe day drink", "two coffees", false),
    ("I now earn 85k a year.", "me", Quantity, "salari", "85k", false),
    ("I got a job at a hospital in town.", "me", Employer, "", "hospital", false),
    ("I'm employed at Halden Freight.", "me", Employer, "", "Halden Freight", false),
    ("My new gig is at Vantage Labs.", "me", Employer, "", "Vantage Labs", false),
    ("These days I work in sales.", "me", Job, "", "sales", false),
    ("I've been a dentist for ten years.", "me", Job, "", "dentist", false),
    ("我儿子的小名叫豆包。", "me", Child, "儿子", "豆包", false),
    ("我闺女名叫欣欣。", "me", Child, "女儿", "欣欣", false),
    ("我养了一只仓鼠叫饼干。", "me", Pet, "仓鼠", "饼干", false),
    ("我家兔子的名字是三叶草。", "me", Pet, "兔子", "三叶草", false),
    ("五一我们要去青海自驾。", "me", Plan, "五一 旅行", "青海", false),
    ("暑假的旅行定在了厦门。", "me", Plan, "旅行 暑假", "厦门", false),
    ("网站改版项目已经上线了。", "thing:网站改版项目", Status, "", "上线", false),
    ("我一天喝两杯咖啡。", "me", Quantity, "咖啡 喝 天 杯", "两杯咖啡", false),
    ("我月收入两万。", "me", Quantity, "工资 月", "两万", false),
    ("我在一家医院找到了工作。", "me", Employer, "", "医院", false),
];
