use super::*;
use proptest::prelude::*;

use CredentialKind::{ApiKey, CardNumber, NationalId, Password};

/// Lines holding credentials, with every secret expected in text order.
#[rustfmt::skip]
const CREDENTIALS: &[(&str, &[(CredentialKind, &str)])] = &[
    // Passwords, PINs and passcodes, English.
    ("my password is hunter2", &[(Password, "hunter2")]),
    ("My password is hunter2.", &[(Password, "hunter2")]),
    ("the wifi password is Tr0ub4dor&3", &[(Password, "Tr0ub4dor&3")]),
    ("The WiFi password is Tr0ub4dor&3, the network is HomeNet.", &[(Password, "Tr0ub4dor&3")]),
    ("pw: x9!kq", &[(Password, "x9!kq")]),
    ("PIN is 4412", &[(Password, "4412")]),
    ("my PIN is 4412, don't tell anyone", &[(Password, "4412")]),
    ("password: correcthorsebatterystaple", &[(Password, "correcthorsebatterystaple")]),
    ("The password for my bank account is S3cure#Pass!", &[(Password, "S3cure#Pass")]),
    ("my email password was changed to Blue-Moon-77", &[(Password, "Blue-Moon-77")]),
    ("password=letmein42", &[(Password, "letmein42")]),
    ("my password's sunshine99", &[(Password, "sunshine99")]),
    ("the door code is 7391", &[(Password, "7391")]),
    ("the alarm code: 0451", &[(Password, "0451")]),
    ("my passcode is 090807", &[(Password, "090807")]),
    ("The password is \"pa55word\" with quotes", &[(Password, "pa55word")]),
    ("router key: Gr33nT3a!", &[(Password, "Gr33nT3a")]),
    ("pin code 8812", &[(Password, "8812")]),
    ("my password is now Autumn2024", &[(Password, "Autumn2024")]),
    ("Password: qwerty", &[(Password, "qwerty")]),
    ("my laptop password is marmalade", &[(Password, "marmalade")]),
    ("Password: \"my secret phrase\"", &[(Password, "my secret phrase")]),
    ("my password is (hunter2)", &[(Password, "hunter2")]),
    ("the pw is Pa$$w0rd!", &[(Password, "Pa$$w0rd")]),
    ("my pin number is 1234.", &[(Password, "1234")]),
    ("the CVV is 737", &[(Password, "737")]),
    ("the CVV is 7373", &[(Password, "7373")]),
    // Passwords, Chinese.
    ("密码是abc123", &[(Password, "abc123")]),
    ("我的支付密码是 884211", &[(Password, "884211")]),
    ("开机密码：qwerty", &[(Password, "qwerty")]),
    ("WiFi密码是Home2024，记一下", &[(Password, "Home2024")]),
    ("银行卡密码为 661203。", &[(Password, "661203")]),
    ("我邮箱的密码改成了 Mail#2023 了", &[(Password, "Mail#2023")]),
    ("锁屏密码 0000 太简单了", &[(Password, "0000")]),
    ("PIN码是 5521", &[(Password, "5521")]),
    ("家里门锁密码:135790", &[(Password, "135790")]),
    ("密码是 4111111111111111", &[(Password, "4111111111111111")]),
    // API keys and tokens.
    ("my key is sk-proj-abc123def456ghi789jkl012", &[(ApiKey, "sk-proj-abc123def456ghi789jkl012")]),
    ("use sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2 for claude", &[(ApiKey, "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2")]),
    ("token ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5", &[(ApiKey, "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5")]),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz is mine", &[(ApiKey, "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz")]),
    ("AWS access key AKIAIOSFODNN7EXAMPLE", &[(ApiKey, "AKIAIOSFODNN7EXAMPLE")]),
    ("slack: xoxb-1234567890-abcdefghij", &[(ApiKey, "xoxb-1234567890-abcdefghij")]),
    ("maps key AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", &[(ApiKey, "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q")]),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N", &[(ApiKey, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N")]),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", &[(ApiKey, "sk_live_4eC39HqLyjWDarjtT1zdp7dc")]),
    ("my api key is 9f8a7b6c5d4e3f2a1b0c9d8e7f6a", &[(ApiKey, "9f8a7b6c5d4e3f2a1b0c9d8e7f6a")]),
    ("API_KEY=Q2xhdWRlSXNHcmVhdDEyMzQ1Njc4", &[(ApiKey, "Q2xhdWRlSXNHcmVhdDEyMzQ1Njc4")]),
    ("the token for staging is 7Hx2Kp9Qw4Lm8Nz3Rt6Vy1Bc", &[(ApiKey, "7Hx2Kp9Qw4Lm8Nz3Rt6Vy1Bc")]),
    ("client secret: d41d8cd98f00b204e9800998ecf8427e", &[(ApiKey, "d41d8cd98f00b204e9800998ecf8427e")]),
    ("我的密钥是 a1B2c3D4e5F6g7H8i9J0k1L2", &[(ApiKey, "a1B2c3D4e5F6g7H8i9J0k1L2")]),
    ("令牌：Zq8Xw7Vc6Bn5Ml4Kj3Hg2Fd1", &[(ApiKey, "Zq8Xw7Vc6Bn5Ml4Kj3Hg2Fd1")]),
    ("hf token hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", &[(ApiKey, "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789")]),
    // Card numbers.
    ("my card is 4111 1111 1111 1111", &[(CardNumber, "4111 1111 1111 1111")]),
    ("my card number is 4111 1111 1111 1111 and CVV 123", &[(CardNumber, "4111 1111 1111 1111"), (Password, "123")]),
    ("card 4111-1111-1111-1111 exp 12/25", &[(CardNumber, "4111-1111-1111-1111")]),
    ("charge 5555555555554444 please", &[(CardNumber, "5555555555554444")]),
    ("Amex 3782 822463 10005", &[(CardNumber, "3782 822463 10005")]),
    ("my visa 4012888888881881.", &[(CardNumber, "4012888888881881")]),
    ("discover: 6011000990139424", &[(CardNumber, "6011000990139424")]),
    ("我的银行卡号是6222021234567890128", &[(CardNumber, "6222021234567890128")]),
    ("卡号 6225 8801 3798 4325，别告诉别人", &[(CardNumber, "6225 8801 3798 4325")]),
    ("diners 38520000023237", &[(CardNumber, "38520000023237")]),
    ("the card 4111 1111 1111 1111 123 is expired", &[(CardNumber, "4111 1111 1111 1111")]),
    ("Mastercard 2223 0031 2200 3222", &[(CardNumber, "2223 0031 2200 3222")]),
    ("UnionPay 6205500000000000004", &[(CardNumber, "6205500000000000004")]),
    // National ids.
    ("my SSN is 123-45-6789", &[(NationalId, "123-45-6789")]),
    ("SSN 536221234", &[(NationalId, "536221234")]),
    ("social security number: 536 22 1234", &[(NationalId, "536 22 1234")]),
    ("it's 219-09-9999 on the form", &[(NationalId, "219-09-9999")]),
    ("身份证号11010519491231002X", &[(NationalId, "11010519491231002X")]),
    ("我的身份证是 330106199003071236。", &[(NationalId, "330106199003071236")]),
    ("id 42010219850615772x ok", &[(NationalId, "42010219850615772x")]),
    ("610103197811203451", &[(NationalId, "610103197811203451")]),
    ("My national insurance number is AB 12 34 56 C", &[(NationalId, "AB 12 34 56 C")]),
    ("NI number: JG103759A", &[(NationalId, "JG103759A")]),
    // Several in one line.
    ("password: hunter22 and card 4111111111111111", &[(Password, "hunter22"), (CardNumber, "4111111111111111")]),
    ("SSN 123-45-6789, PIN 4412", &[(NationalId, "123-45-6789"), (Password, "4412")]),
    ("身份证 370202199512310044，密码 abc12345", &[(NationalId, "370202199512310044"), (Password, "abc12345")]),
];

/// Lines with ordinary numbers and words that must not be taken for credentials.
#[rustfmt::skip]
const NOT_CREDENTIALS: &[&str] = &[
    "I paid $1,234.56 for the flight",
    "call me at 138 1234 5678",
    "my phone is 13812345678",
    "+1 (555) 123-4567 is the office",
    "+86 138 1234 5678",
    "order number 4111111111111111",
    "tracking 1Z999AA10123456784",
    "ISBN 978-0-306-40615-7",
    "the date is 2023-05-08",
    "we met on 08/05/2023 at 10:30",
    "version 1.2.3 shipped",
    "It happened in 2024",
    "I'm 34 years old",
    "room 1204, floor 12",
    "flight CA1234 leaves at 9",
    "zip code 94110",
    "the total was 4111111111111112",
    "1234567812345670 is just a number",
    "timestamp 20230508123045",
    "000-12-3456",
    "666-12-3456",
    "912-12-3456",
    "the ratio is 123-45-67890",
    "110105194912310021",
    "身份证号码是18位的",
    "I forgot my password",
    "The password is wrong",
    "the password is the same as before",
    "What's my password?",
    "my password is too weak",
    "password reset link sent",
    "The PIN is 4 digits",
    "the pin is broken",
    "the password is required",
    "I changed my password yesterday",
    "password is on the fridge",
    "change your password every 90 days",
    "the password is case sensitive",
    "密码错误",
    "密码是多少？",
    "密码是8位数",
    "我忘记密码了",
    "密码不对",
    "请输入密码",
    "the token limit is 4096",
    "the key is in the drawer",
    "API key is required",
    "the key to success is consistency",
    "commit 3f9a2b1c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a",
    "sk-learn is a library",
    "ghp_short",
    "akiaiosfodnn7example",
    "my temperature is 36.5",
    "我的电话是13812345678",
    "订单号 6222021234567890128",
    "快递单号 4111111111111111",
    "我今年28岁，住在上海",
    "我家在3号楼1204室",
    "价格是1999元",
    "2023年5月8日",
    "between 10:30 and 11:45",
    "pi is 3.14159265358979323846",
    "the population is 1,411,750,000",
    "account balance 12345.67",
    "he scored 98 out of 100",
    "keep the keys by the door",
    "the passport number is E12345678",
    "护照号码是E12345678",
    "my passport is G12345678",
    "the password is in my notes",
    "the password is at least 12 characters",
    "password must be 8-16 chars",
    "the password to the wifi is on the router",
    "The passwords are stored securely",
    "pin it to the board",
    "I'll pin: the top post",
    "key: value",
    "token: abcdefghijklmnopqrstuvwxyz",
    "Tokens: 4096 tokens used",
    "my secret is that I love cats",
    "the api key is sk-xxxxxxxxxxxxxxxxxxxxxxxx",
    "eyJhbGciOiJIUzI1NiJ9",
    "IBAN GB82 WEST 1234 5698 7654 32",
    "1234 5678 9012 3456",
    "手机号13800138000",
    "密码是我生日",
    "PIN: 12",
    "I have 4 pins",
    "",
];

fn found(text: &str) -> Vec<(CredentialKind, &str)> {
    credentials(text)
        .into_iter()
        .map(|c| (c.kind, &text[c.span]))
        .collect()
}

#[test]
fn patterns_compile() {
    assert!(credentials::compiled());
}

#[test]
fn credential_table() {
    assert!(CREDENTIALS.len() >= 60, "{}", CREDENTIALS.len());
    let mut failures = Vec::new();
    for (text, expected) in CREDENTIALS {
        let got = found(text);
        if got != *expected {
            failures.push(format!("{text:?}: got {got:?}, want {expected:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn not_credential_table() {
    assert!(NOT_CREDENTIALS.len() >= 60, "{}", NOT_CREDENTIALS.len());
    let mut failures = Vec::new();
    for text in NOT_CREDENTIALS {
        let got = found(text);
        if !got.is_empty() {
            failures.push(format!("{text:?}: got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn redaction_uses_the_text_language() {
    let r = redact_credentials("my password is hunter2 and my card is 4111 1111 1111 1111.");
    assert_eq!(
        r.text,
        "my password is [redacted password] and my card is [redacted card number]."
    );
    assert_eq!(r.kinds, [Password, CardNumber]);
    let r = redact_credentials("我的支付密码是 884211，卡号6222021234567890128。");
    assert_eq!(r.text, "我的支付密码是 [已隐去密码]，卡号[已隐去卡号]。");
    assert_eq!(r.kinds, [Password, CardNumber]);
    let r =
        redact_credentials("SSN 123-45-6789 and 219-09-9999, key sk-proj-abc123def456ghi789jkl012");
    assert_eq!(
        r.text,
        "SSN [redacted ID number] and [redacted ID number], key [redacted API key]"
    );
    assert_eq!(r.kinds, [NationalId, ApiKey]);
    let plain = "nothing secret here, 2023-05-08";
    let r = redact_credentials(plain);
    assert_eq!(r.text, plain);
    assert!(r.kinds.is_empty());
}

#[test]
fn kind_names() {
    let names: Vec<&str> = [Password, ApiKey, CardNumber, NationalId]
        .iter()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(names, ["password", "api_key", "card_number", "national_id"]);
}

/// Forget requests with the topic expected and whether they ask for everything about it.
#[rustfmt::skip]
const FORGET: &[(&str, &str, bool)] = &[
    ("Forget my passport number.", "my passport number", false),
    ("forget my passport number, please", "my passport number", false),
    ("Please forget what I told you about my ex.", "my ex", true),
    ("Can you delete my home address?", "my home address", false),
    ("I want you to forget everything about Alex.", "Alex", true),
    ("Don't remember my phone number", "my phone number", false),
    ("Stop remembering my birthday, please", "my birthday", false),
    ("Erase any record of my salary", "my salary", true),
    ("please don't remember anything about Alex", "Alex", true),
    ("forget that my PIN is 4412", "my PIN", false),
    ("Could you please forget my email address?", "my email address", false),
    ("OK, please just forget my old address.", "my old address", false),
    ("Forget about my ex.", "my ex", false),
    ("You can forget my old phone number now.", "my old phone number", false),
    ("I'd like you to forget my diagnosis.", "my diagnosis", false),
    ("Please delete my address from your memory.", "my address", false),
    ("Remove my phone number from your notes", "my phone number", false),
    ("Wipe everything you know about my sister", "my sister", true),
    ("I need you to forget all the details about my divorce", "my divorce", true),
    ("Unlearn my middle name", "my middle name", false),
    ("Please stop storing my location", "my location", false),
    ("Don't keep my credit card info", "my credit card info", false),
    ("you don't need to remember my salary anymore", "my salary", false),
    ("I don't want you to remember where I work", "where I work", false),
    ("Forget everything I told you about Jordan yesterday", "Jordan", true),
    ("Thanks. Now forget my address, please.", "my address", false),
    ("I moved last week, so please forget my old address", "my old address", false),
    ("Forget the address I gave you", "the address", false),
    ("Could you forget my kids' names?", "my kids' names", false),
    ("Forget about me.", "me", true),
    ("Forget everything you know about me", "me", true),
    ("Please forget everything.", "everything", true),
    ("Would you please forget my weight", "my weight", false),
    ("Forget my phone number 555-867-5309", "my phone number", false),
    ("I'd like to delete my address from your memory", "my address", false),
    ("Go ahead and forget my therapist's name.", "my therapist's name", false),
    ("no longer remember my birthday", "my birthday", false),
    ("Delete my email", "my email", false),
    ("Would you mind forgetting my address?", "my address", false),
    ("I don't need you to remember my address", "my address", false),
    ("please forget my wife's name is Mary", "my wife's name", false),
    ("Forget that I told you about my debt", "my debt", true),
    ("clear your memories of me", "me", true),
    ("Hey assistant, forget my address", "my address", false),
    ("Alex, forget my address", "my address", false),
    ("So, can you please forget about my health condition?", "my health condition", false),
    ("You should delete what you know about my mother's illness", "my mother's illness", true),
    ("erase all memories of my trip to Paris", "my trip to Paris", true),
    ("Forget where I live.", "where I live", false),
    ("Forget I ever told you about my ex", "my ex", true),
    ("Don't remember that I'm gay", "I'm gay", false),
    ("I'd prefer you not remember my salary", "my salary", false),
    ("Please purge my medical history", "my medical history", false),
    ("scrub my phone number", "my phone number", false),
    ("Forget Sarah.", "Sarah", false),
    ("Erase my birthday from memory", "my birthday", false),
    ("Forget about the surgery I mentioned", "the surgery", false),
    ("remove my name from your memory", "my name", false),
    // Chinese.
    ("请忘掉我的住址", "我的住址", false),
    ("请忘掉我的住址好吗", "我的住址", false),
    ("把我的电话号码删掉", "我的电话号码", false),
    ("忘记我跟你说过的关于小王的事", "小王", true),
    ("别记我的生日了", "我的生日", false),
    ("关于我前男友的一切都忘了吧", "我前男友", true),
    ("忘掉我的电话13812345678", "我的电话", false),
    ("你可以忘掉我的工资吗？", "我的工资", false),
    ("麻烦把我的身份证号码删除", "我的身份证号码", false),
    ("不要记住我的邮箱", "我的邮箱", false),
    ("别再记得我的病情了", "我的病情", false),
    ("你不用记我的年龄", "我的年龄", false),
    ("请把关于小李的事都忘了吧", "小李", true),
    ("好的，忘了我的住址吧", "我的住址", false),
    ("我希望你忘掉我前女友的名字", "我前女友的名字", false),
    ("从现在起别存我的手机号", "我的手机号", false),
    ("把我的地址从你的记忆里删掉", "我的地址", false),
    ("我的住址你就忘了吧", "我的住址", false),
    ("请删除所有关于我工作的信息", "我工作", true),
    ("请忘记一切", "一切", true),
    ("帮我把我的护照号码清除掉", "我的护照号码", false),
    ("忘掉我的密码是abc123这件事", "我的密码", false),
    ("删除我的所有信息", "我", true),
    ("请把我的银行卡号删掉：6222021234567890128", "我的银行卡号", false),
    ("我不想让你记住我的住址", "我的住址", false),
    ("请清除你关于我的记忆", "我", true),
    ("我希望你能忘掉我的病", "我的病", false),
    ("你能不能别记我的电话了", "我的电话", false),
    ("我的地址请删掉", "我的地址", false),
    ("删了我的手机号吧", "我的手机号", false),
    ("把关于我的一切都删掉", "我", true),
    ("忘掉我的名字叫李雷", "我的名字", false),
    ("请不要记录我的位置", "我的位置", false),
    ("能把我的生日从记忆里删除吗", "我的生日", false),
    ("能不能忘掉我的地址", "我的地址", false),
    ("别保存我的信用卡信息", "我的信用卡信息", false),
    ("不要再记得我住在哪里了", "我住在哪里", false),
    ("忘了我吧", "我", true),
    ("关于小林的事情都别记了。", "小林", true),
    ("把我跟你说的诊断结果忘掉吧。", "诊断结果", false),
    ("请忘掉我用哪家银行。", "我用哪家银行", false),
    ("别记我开什么车了。", "我开什么车", false),
];

/// Lines that use forgetting words without asking the assistant to forget anything.
#[rustfmt::skip]
const NOT_FORGET: &[&str] = &[
    "I forgot my keys",
    "I'll never forget that trip",
    "Don't forget to buy milk",
    "Did you forget my birthday?",
    "I want to forget that day",
    "forget it, never mind",
    "Forget it.",
    "Never mind, forget that.",
    "Remember to delete the old files",
    "Delete the email from my boss",
    "I don't remember my phone number",
    "Please don't forget my birthday",
    "Let's forget about it",
    "How do I delete my account?",
    "I need to delete my Facebook account",
    "Remove the onions from the recipe",
    "Can you remove the background from this photo?",
    "Please clear the table",
    "Wipe the counter after cooking",
    "Wipe my phone before selling it",
    "Forget-me-nots are blooming",
    "The right to be forgotten matters",
    "I keep forgetting my password",
    "Why would I forget my own birthday?",
    "Have you forgotten my name?",
    "Don't you ever forget me",
    "She told me to forget him",
    "If you forget my birthday I'll be sad",
    "I never delete anything",
    "Drop me a line sometime",
    "Don't keep me waiting",
    "You forgot to mention the price",
    "Forget what I said.",
    "I tend to forget names",
    "never forget where you came from",
    "Clear my schedule for Friday",
    "Please delete the duplicate rows in the spreadsheet",
    "I'd like to forget my ex",
    "Did I tell you I forgot my wallet?",
    "We should drop the subject",
    "Can you forget things?",
    "Forget I said anything",
    "Don't save the file yet",
    "Delete my account",
    "delete my last message",
    "I said forget it",
    "Just forget it all",
    "Do you mind deleting the old photos?",
    "I forgot to delete my old address",
    "You never forget anything, do you?",
    "Can you not forget my birthday this year?",
    "I can't forget my ex",
    "How can I forget my ex?",
    "Sometimes I wish I could forget my childhood",
    "Delete my last three messages",
    "Please remove my name from the list",
    "Did you not remember my birthday?",
    "I didn't remember my keys",
    // Chinese.
    "我忘了带钥匙",
    "别忘了明天开会",
    "我永远忘不了那天",
    "你忘了我的生日吗？",
    "算了，忘了吧",
    "忘了跟你说，我下周出差",
    "我把钥匙忘在家里了",
    "他把我的生日忘了",
    "删掉这张照片",
    "我想忘掉那天",
    "千万别忘记带伞",
    "我忘记密码了",
    "那些事我都忘了",
    "不要忘了吃药",
    "我不记得我的密码了",
    "你忘记我的生日了",
    "把这个文件删除",
    "忘了吧",
    "我删了那个应用",
    "我忘了你的生日，对不起",
    "忘了你的生日",
    "请你忘掉这件事",
    "请忘记我说过的话",
    "这件事你就忘了吧",
    "别把我的生日忘了",
    "你还记得我的生日吗",
    "我总是忘记吃药",
    "以后别再提我前男友了",
    "请删掉我跟你说过的那些话",
    "把我的照片删了",
    "帮我删掉那个文件",
    "清空聊天记录",
    "你把我的生日忘了",
    "你能忘掉我刚才说的话吗",
    "把我的名字从名单里删掉",
    "我不能忘记她",
    "会不会忘了我的生日",
];

#[test]
fn forget_table() {
    assert!(FORGET.len() >= 50, "{}", FORGET.len());
    let mut failures = Vec::new();
    for (text, topic, everything) in FORGET {
        match forget_request(text) {
            Some(r) if r.topic == *topic && r.everything == *everything => {}
            other => failures.push(format!(
                "{text:?}: got {:?}, want {topic:?} everything={everything}",
                other.map(|r| (r.topic, r.everything))
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn not_forget_table() {
    assert!(NOT_FORGET.len() >= 50, "{}", NOT_FORGET.len());
    let mut failures = Vec::new();
    for text in NOT_FORGET {
        if let Some(r) = forget_request(text) {
            failures.push(format!("{text:?}: got {:?}", r.topic));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn values(text: &str) -> Vec<&str> {
    let r = forget_request(text).expect(text);
    r.stated_values.iter().map(|v| &text[v.clone()]).collect()
}

#[test]
fn stated_values() {
    assert_eq!(values("forget that my PIN is 4412"), ["4412"]);
    assert_eq!(values("忘掉我的电话13812345678"), ["13812345678"]);
    assert_eq!(
        values("Forget my phone number 555-867-5309"),
        ["555-867-5309"]
    );
    assert_eq!(
        values("forget my email jo.doe@example.com please"),
        ["jo.doe@example.com"]
    );
    assert_eq!(
        values("Forget that my ex is called Jordan Lee."),
        ["Jordan Lee"]
    );
    assert_eq!(values("请忘掉我的手机号 138 1234 5678"), ["138 1234 5678"]);
    assert_eq!(values("忘掉我的密码是abc123这件事"), ["abc123"]);
    assert_eq!(values("forget my password hunter2"), ["hunter2"]);
    assert_eq!(values("please forget my wife's name is Mary"), ["Mary"]);
    assert_eq!(values("忘掉我的名字叫李雷"), ["李雷"]);
    assert_eq!(
        values("请把我的银行卡号删掉：6222021234567890128"),
        ["6222021234567890128"]
    );
    assert_eq!(values("Forget my SSN 123-45-6789"), ["123-45-6789"]);
    assert!(values("Forget my passport number.").is_empty());
    let r = forget_request("Please forget my 2019 trip to Oslo").unwrap();
    assert_eq!(r.topic, "my 2019 trip to Oslo");
}

#[test]
fn terms_drop_possessives_and_add_synonyms() {
    let r = forget_request("Forget my home address.").unwrap();
    assert_eq!(r.terms, ["home", "address"]);
    for s in ["live", "street"] {
        assert!(r.synonyms.iter().any(|x| x == s), "{:?}", r.synonyms);
    }
    let r = forget_request("Please forget my phone number").unwrap();
    assert_eq!(r.terms, ["phone", "number"]);
    for s in ["mobil", "cell"] {
        assert!(r.synonyms.iter().any(|x| x == s), "{:?}", r.synonyms);
    }
    let r = forget_request("请忘掉我的住址").unwrap();
    assert_eq!(r.terms, ["住址"]);
    for s in ["地址", "住在", "家"] {
        assert!(r.synonyms.iter().any(|x| x == s), "{:?}", r.synonyms);
    }
    let r = forget_request("把我的电话删掉").unwrap();
    for s in ["手机", "号码"] {
        assert!(r.synonyms.iter().any(|x| x == s), "{:?}", r.synonyms);
    }
    let r = forget_request("Please forget everything.").unwrap();
    assert!(r.terms.is_empty() && r.everything);
    let r = forget_request("Forget everything about me").unwrap();
    assert!(r.terms.is_empty() && r.everything);
}

#[test]
fn span_is_the_request_clause() {
    let text = "I had a great day. OK, please forget my address.";
    let r = forget_request(text).unwrap();
    assert_eq!(&text[r.span], "OK, please forget my address.");
    let text = "谢谢你。请忘掉我的住址";
    let r = forget_request(text).unwrap();
    assert_eq!(&text[r.span], "请忘掉我的住址");
}

/// Every range is a char-boundary range inside `text`.
fn check_ranges(text: &str) -> Result<(), TestCaseError> {
    let mut last = 0;
    for c in credentials(text) {
        prop_assert!(c.span.start >= last && c.span.start < c.span.end && c.span.end <= text.len());
        prop_assert!(text.is_char_boundary(c.span.start) && text.is_char_boundary(c.span.end));
        last = c.span.end;
    }
    let r = redact_credentials(text);
    prop_assert_eq!(r.kinds.is_empty(), r.text == text);
    if let Some(f) = forget_request(text) {
        for v in f.stated_values.iter().chain([&f.span]) {
            prop_assert!(v.start <= v.end && v.end <= text.len());
            prop_assert!(text.is_char_boundary(v.start) && text.is_char_boundary(v.end));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_arbitrary_text(text in any::<String>()) {
        check_ranges(&text)?;
    }

    #[test]
    fn never_panics_on_mixed_scripts_and_digits(
        text in "[0-9０-９ a-zA-Z\\-_.:：，。!？?'’\"@+#&=/请忘掉删除把我的密码是身份证卡号别记住关于一切吧了forgetdlpswkinyou]{0,80}"
    ) {
        check_ranges(&text)?;
    }

    #[test]
    fn never_panics_on_request_shaped_text(
        prefix in "(please |can you |I want you to |请|把|你可以)?",
        verb in "(forget|delete|don't remember|stop remembering|忘掉|删掉|别记|忘了)",
        rest in "[ a-z0-9我的住址电话号码关于一切吧了,.，。]{0,30}",
    ) {
        check_ranges(&format!("{prefix}{verb} {rest}"))?;
        check_ranges(&format!("{prefix}{verb}{rest}"))?;
    }
}

/// A line of about 64 KiB made of `unit` repeated.
fn long_line(unit: &str) -> String {
    let mut line = String::new();
    while line.len() < 64 * 1024 {
        line.push_str(unit);
    }
    line
}

#[test]
fn long_lines_do_not_panic_and_stay_fast() {
    let units = [
        "Forget my phone 4111 1111 1111 1111 密码是abc123 请忘掉我的住址 sk-proj-abc123def456ghi789jkl012 ",
        "delete ",
        "please forget, ",
        "I don't remember ",
        "password is x ",
        "1 ",
        "4111 ",
        "忘",
        "忘掉",
        "把我的忘了",
    ];
    let start = std::time::Instant::now();
    for unit in units {
        let line = long_line(unit);
        check_ranges(&line).unwrap();
    }
    // Generous for a debug build on a busy machine; release takes a few ms a line.
    assert!(start.elapsed().as_secs() < 30, "{:?}", start.elapsed());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_64_kib_lines(
        unit in "[0-9 a-zA-Z\\-.:：，。'请忘掉删除把我的密码是别记关于一切吧了forgetdlpswkinyou]{1,24}"
    ) {
        check_ranges(&long_line(&unit))?;
    }
}

/// Time per line of both rules over typical dialogue lines. Run in release:
/// `cargo test --release -p mnemos-text privacy_timing -- --ignored --nocapture`.
#[test]
#[ignore]
fn privacy_timing() {
    let lines: Vec<&str> = CREDENTIALS
        .iter()
        .map(|(t, _)| *t)
        .chain(NOT_CREDENTIALS.iter().copied())
        .chain(FORGET.iter().map(|(t, _, _)| *t))
        .chain(NOT_FORGET.iter().copied())
        .chain([
            "I went hiking with my sister last weekend and we saw a bear near the lake.",
            "我上周末和妹妹去爬山了，在湖边看到了一只熊，真是太吓人了。",
        ])
        .collect();
    for line in &lines {
        let _ = redact_credentials(line);
        let _ = forget_request(line);
    }
    let rounds = 200;
    let time = |f: &dyn Fn(&str)| {
        let start = std::time::Instant::now();
        for _ in 0..rounds {
            for line in &lines {
                f(line);
            }
        }
        start.elapsed().as_secs_f64() * 1e6 / (rounds * lines.len()) as f64
    };
    let redact = time(&|l| {
        std::hint::black_box(redact_credentials(l));
    });
    let forget = time(&|l| {
        std::hint::black_box(forget_request(l));
    });
    let plain = ["I went hiking with my sister last weekend and we saw a bear near the lake."];
    let start = std::time::Instant::now();
    for _ in 0..10_000 {
        std::hint::black_box(redact_credentials(plain[0]));
        std::hint::black_box(forget_request(plain[0]));
    }
    let ordinary = start.elapsed().as_secs_f64() * 1e6 / 10_000.0;
    let (slowest, worst) = lines
        .iter()
        .map(|line| {
            let start = std::time::Instant::now();
            for _ in 0..rounds {
                std::hint::black_box(redact_credentials(line));
                std::hint::black_box(forget_request(line));
            }
            (*line, start.elapsed().as_secs_f64() * 1e6 / rounds as f64)
        })
        .fold(("", 0.0), |a, b| if b.1 > a.1 { b } else { a });
    println!(
        "{} lines: redact_credentials {redact:.1} µs/line, forget_request {forget:.1} µs/line, both on an ordinary line {ordinary:.1} µs, slowest line {worst:.1} µs ({slowest:?})",
        lines.len()
    );
}
