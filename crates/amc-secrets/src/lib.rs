//! One-time codes and sign-in links in messages: found as messages arrive, so what agents
//! are given can hide them. A code that reaches an agent, or that another message tricks
//! an agent into repeating, can take over an account.
//!
//! The rules are tables below. A code is a run of 4 to 8 digits (or 4 to 10 letters and
//! digits, where the wording is unmistakable) near words that say it signs someone in or
//! confirms something, in the languages the search index covers; Apple's origin-bound
//! form (`@example.com #123456`); any such run from a short-code sender. A sign-in link
//! is a URL whose address speaks of resetting, signing in or verifying and carries a
//! token. Numbers that are prices, dates, times, phone numbers or parts of larger numbers
//! are never codes. A run or a link carrying a token that the rules leave (not an offer's)
//! is then put to a small model learned from the sets of messages in
//! `tests/fixtures/secrets/` ([`learned`]), which takes it only when the text around it
//! reads like the text around codes or sign-in links; references, places and quantities
//! are still ruled out after it. Those sets hold real-shaped examples and non-examples; their
//! tests give the finder's recall and how many ordinary messages it flags.

use std::ops::Range;

#[doc(hidden)]
pub mod learned;

/// What hides a one-time code in the text agents are given.
pub const CODE_MARKER: &str = "[one-time code hidden by AMC]";
/// What hides a sign-in or password-reset link in the text agents are given.
pub const LINK_MARKER: &str = "[sign-in link hidden by AMC]";

/// A kind of secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecretKind {
    /// A one-time, verification or login code.
    Code,
    /// A password-reset or sign-in link.
    Link,
}

impl SecretKind {
    /// The name on the wire (`redacted` of a message).
    pub fn as_str(self) -> &'static str {
        match self {
            SecretKind::Code => "one_time_code",
            SecretKind::Link => "sign_in_link",
        }
    }

    fn marker(self) -> &'static str {
        match self {
            SecretKind::Code => CODE_MARKER,
            SecretKind::Link => LINK_MARKER,
        }
    }
}

/// The version of the rules below. Stored with the classification of every message
/// (`messages.secrets`): a build whose rules differ classifies every message again, in the
/// background (see `Store::classify_more`). Raise it with every change to the rules.
pub const RULES: i64 = 29;

impl SecretKind {
    /// The kind's bit in a stored classification ([`classify`]).
    pub fn bit(self) -> i64 {
        match self {
            SecretKind::Code => 1,
            SecretKind::Link => 2,
        }
    }

    /// The kinds whose bits are set in `mask`.
    pub fn in_mask(mask: i64) -> Vec<SecretKind> {
        [SecretKind::Code, SecretKind::Link].into_iter().filter(|k| mask & k.bit() != 0).collect()
    }
}

/// Who wrote a message, as the secret finder needs it: its source, its sender's id, and
/// whether the person (or an agent, on the person's behalf) wrote it.
#[derive(Debug, Clone, Copy)]
pub struct Author<'a> {
    /// `imessage` or `discord`.
    pub source: &'a str,
    /// The sender's id (`me` for the person's own iMessages).
    pub sender: &'a str,
    /// Whether the person wrote it.
    pub is_self: bool,
}

impl Author<'_> {
    /// Whether the sender is a short code or an alphanumeric sender id: an iMessage
    /// handle, never the person (whose iMessages AMC stores as from `me`).
    pub fn is_short_code(&self) -> bool {
        !self.is_self && self.source == "imessage" && is_short_code_sender(self.sender)
    }
}

/// The kinds of secret a message by `author` holds, as bits ([`SecretKind::bit`]; 0:
/// none): what `messages.secrets` stores.
pub fn classify(author: Author<'_>, text: &str) -> i64 {
    in_message(author, text).iter().fold(0, |mask, f| mask | f.kind.bit())
}

/// The secrets in a message by `author` ([`find`]; every number is a code's candidate
/// when the sender is a short code).
pub fn in_message(author: Author<'_>, text: &str) -> Vec<Found> {
    find(text, author.is_short_code())
}

/// Whether a channel of `source` with platform id `platform_id` is a conversation with a
/// short code or an alphanumeric sender id (`any;-;72975`): the person is asked twice
/// before approving it, since such senders send codes and never chat.
pub fn is_short_code_channel(source: &str, platform_id: &str) -> bool {
    let mut parts = platform_id.splitn(3, ';');
    match (source, parts.next(), parts.next(), parts.next()) {
        ("imessage", Some(_), Some("-"), Some(handle)) => is_short_code_sender(handle),
        _ => false,
    }
}

/// A secret found in a text: what it is, where (byte offsets) and which rule found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// What it is.
    pub kind: SecretKind,
    /// Where it is in the text.
    pub at: Range<usize>,
    /// Which rule found it.
    pub rule: Rule,
}

/// The rules that find secrets: each [`Found`] names the one that found it, so the person
/// sees why AMC hid something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// Apple's origin-bound form, a line's `@example.com #123456`.
    OriginBound,
    /// The words right before or after it call it the code, the PIN or the password ("Your
    /// code is 482913", "482913 is your code").
    CalledTheCode,
    /// Near words that say it signs someone in, confirms something or must not be shared
    /// ("verification", "do not share", "OTP").
    SignInWords,
    /// Near a word for code or for signing in ("code", "PIN", "to log in").
    CodeWord,
    /// From a short code or a Sender ID, in a message that asks for a code to be entered.
    ShortCode,
    /// A temporary or Wi-Fi password, after its word.
    Password,
    /// A short reply that hands over a number and nothing else ("ok it's 482980").
    HandedOver,
    /// The same code again, elsewhere in the message.
    Repeated,
    /// A link whose address says it signs in or resets, and carries a token.
    LinkAddress,
    /// A link the words around call a sign-in, reset or verification link.
    LinkWords,
    /// The words around it read like those around codes or sign-in links, to the model
    /// learned from services' messages ([`learned`]).
    Learned,
    /// The rules failed on this text: all of it is hidden.
    Unread,
}

impl Rule {
    /// Every rule.
    const ALL: [Rule; 12] = [
        Rule::OriginBound,
        Rule::CalledTheCode,
        Rule::SignInWords,
        Rule::CodeWord,
        Rule::ShortCode,
        Rule::Password,
        Rule::HandedOver,
        Rule::Repeated,
        Rule::LinkAddress,
        Rule::LinkWords,
        Rule::Learned,
        Rule::Unread,
    ];

    /// The rule of that name on the wire ([`Rule::as_str`]).
    pub fn named(name: &str) -> Option<Rule> {
        Self::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// The rule's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::OriginBound => "origin_bound",
            Rule::CalledTheCode => "called_the_code",
            Rule::SignInWords => "sign_in_words",
            Rule::CodeWord => "code_word",
            Rule::ShortCode => "short_code",
            Rule::Password => "password",
            Rule::HandedOver => "handed_over",
            Rule::Repeated => "repeated",
            Rule::LinkAddress => "link_address",
            Rule::LinkWords => "link_words",
            Rule::Learned => "learned",
            Rule::Unread => "unread",
        }
    }

    /// Why the rule took it, in words for the person.
    pub fn why(self) -> &'static str {
        match self {
            Rule::OriginBound => "written in Apple's form for one-time codes (@site #code)",
            Rule::CalledTheCode => "the words next to it call it the code",
            Rule::SignInWords => "near words about signing in, verifying or not sharing it",
            Rule::CodeWord => "near a word for a code or for signing in",
            Rule::ShortCode => "from a short code or Sender ID, in a message asking to enter a code",
            Rule::Password => "a password, after its word",
            Rule::HandedOver => "a short reply that hands over a number",
            Rule::Repeated => "the same code again",
            Rule::LinkAddress => "a link whose address signs in or resets, with a token",
            Rule::LinkWords => "a link the words around call a sign-in or reset link",
            Rule::Learned => "the words around it read like those around codes or sign-in links in services' messages",
            Rule::Unread => "AMC could not read this message for codes, so it hides all of it",
        }
    }
}

/// Words that say a code near them signs someone in or confirms something (lowercase).
#[rustfmt::skip]
const STRONG: &[&str] = &[
    // English
    "verification", "verify", "otp", "passcode", "pass code", "one-time", "one time password", "one time passcode",
    "one time code", "one time pin", "onetime", "security code", "login code", "log-in code",
    "log in code", "sign-in code", "sign in code", "signin code", "authentication code",
    "authentication number", "auth code", "2fa", "two-factor", "two factor", "confirmation code",
    "access code", "did not request this", "didn't request this", "pin code", "do not share", "don't share", "dont share", "never share",
    "doesn't ask", "never ask", "will never call", "reset code", "recovery code", "backup code",
    "steam guard", "3d secure", "3-d secure", "temporary password", "temporary code", "<#>", "password reset",
    "reset your password", "pin number", "activation code",
    // Spanish, Portuguese
    "verificación", "verificacion", "código de seguridad", "codigo de seguridad", "código de acesso",
    "código de acceso", "no compartas", "no lo compartas", "no la compartas", "verificação",
    "verificacao", "código de segurança", "não compartilhe", "nao compartilhe", "não partilhe",
    // French
    "vérification", "verification", "code de sécurité", "code de confirmation", "ne partagez",
    "ne le partagez", "ne communiquez", "code à usage unique",
    // German
    "bestätigungscode", "sicherheitscode", "verifizierungscode", "einmalcode", "einmalpasswort",
    "bestätigung", "nicht weiter", "geben sie diesen code", "anmeldecode", "ihre tan", "mtan",
    "mobiletan", "pushtan", "smstan", "tan-nummer", "aktivierungscode", "zugangscode",
    "freischaltcode",
    // Italian
    "codice di verifica", "codice di sicurezza", "non condividere", "codice di accesso",
    "codice monouso", "non comunicarlo", "non comunicare", "never give", "do not give",
    "don't give", "never read this out", "no se lo pases", "ne le transmettez", "ne le donnez",
    "niemals weitergeben", "nicht weitergeben", "nunca partilhe", "nunca compartilhe", "mit niemandem",
    // Dutch
    "verificatiecode", "beveiligingscode", "deel deze code", "inlogcode", "eenmalige",
    // Chinese
    "验证码", "驗證碼", "校验码", "校驗碼", "动态码", "動態碼", "认证码", "認證碼", "安全码", "请勿泄露", "請勿洩露", "请勿转告", "請勿轉告", "勿告知", "请勿告诉", "勿告诉", "請勿向任何人", "勿告訴", "切勿", "登录码",
    "登入碼", "登入代碼", "登录代码", "驗證代碼", "验证代码", "請勿分享", "请勿分享", "兩步驟驗證", "两步验证",
    // Japanese
    "認証コード", "確認コード", "認証番号", "確認番号", "ワンタイム", "セキュリティコード", "パスコード", "ログインコード", "本人確認", "教えないで", "ログイン確認",
    // Korean
    "인증번호", "인증 번호", "인증코드", "인증 코드", "보안코드", "보안 코드", "확인 코드", "확인코드", "타인에게", "본인확인", "알려주지 마", "누구에게도",
    // Thai
    "รหัสยืนยัน", "รหัส otp", "ห้ามบอก", "รหัสผ่านครั้งเดียว", "รหัสotp",
    // Russian, Polish
    "код подтверждения", "код проверки", "никому не сообщ", "никому не говор", "никому его не",
    "не сообщайте", "одноразовый", "код доступа", "код доступу", "ключ подтверждения",
    "kod weryfikacyjny", "kod jednorazowy", "nikomu nie poda", "nie udostępniaj", "do logowania",
    "kod sms",
    // Danish, Norwegian, Swedish, Finnish
    "engangskode", "bekræftelseskode", "bekreftelseskode", "verifieringskod", "engångskod",
    "vahvistuskoodi", "kertakäyttö",
    // Greek, Turkish, Arabic
    "επαλήθευσης", "doğrulama", "tek kullanımlık", "kimseyle paylaşma", "giriş kodu", "لمرة واحدة", "tek kullanimlik",
    "dogrulama",
    "رمز التحقق", "كود التحقق", "لا تشارك",
    // Indonesian, Malay, Vietnamese
    "kode verifikasi", "kode otp", "jangan berikan", "jangan bagikan", "kod pengesahan",
    "mã xác thực", "mã xác nhận", "mã otp", "không chia sẻ", "ma xac thuc", "ma xac nhan",
    // Hindi, Bengali
    "ओटीपी", "सत्यापन", "साझा न करें", "किसी को न बताएं", "যাচাই", "ওটিপি",
    // Czech, Slovak, Romanian, Hungarian
    "ověřovací", "overovací", "jednorázový", "nikomu nesdělujte", "de verificare", "nu îl comunica",
    "ellenőrző", "egyszer használatos",
    // Persian, Hebrew
    "تأیید", "تایید", "رمز یکبار", "אימות", "חד פעמי", "אל תשתפו",
];

/// Words for "code" or "PIN" alone: a number near one is a code, unless the words around
/// say another kind of code ([`NOT_SECRET`]).
#[rustfmt::skip]
const CODE_WORDS: &[&str] = &[
    "code", "codes", "código", "codigo", "codice", "kod", "kode", "koden", "koodi", "koodisi", "koodilla",
    "koodin", "koodia",
    "kodunuz", "pin", "tan", "clave", "пароль", "код",
    "κωδικ", "رمز", "كود", "mã", "コード", "코드", "รหัส", "码", "碼", "kód", "kódod", "kódja", "codul", "cod",
    "کد", "קוד", "কোড", "कोड", "โค้ด", "tac", "token", "口令", "確認キー",
    // A password is a secret too ("Wi-Fi password: hunter22", "Haslo do logowania: …").
    "password", "passwort", "contraseña", "senha", "mot de passe", "şifre", "sifre", "şifreniz",
    "sifreniz", "hasło", "haslo", "şifresi", "sifresi",
];

/// Words that sign someone in or confirm something with a number near them ("Enter 482913
/// to sign in", "Use 482942 to confirm your phone"): as near as a word for code must be.
#[rustfmt::skip]
const SIGN_IN: &[&str] = &[
    "sign in", "signing in", "sign-in", "log in", "logging in", "log-in", "login", "to confirm",
    "confirm your", "to verify", "to reset", "reset your", "para entrar", "per confermare",
    "para confirmar", "pour confirmer", "zur bestätigung", "um zu bestätigen", "om te bevestigen",
    "σύνδεση", "σύνδεσης", "ログイン", "サインイン", "iniciar sesión", "iniciar sessão", "se connecter", "anmelden", "inloggen",
    "bekrefte", "innlogging", "bekräfta", "inloggning", "bekræft", "vahvista", "kirjautu", "confirmar seu",
    "confirmar tu", "confirmer votre",
];

/// Codes that are not secrets: where these stand, "code" says nothing.
#[rustfmt::skip]
const NOT_SECRET: &[&str] = &[
    "zip code", "postal code", "post code", "postcode", "code of conduct", "cod poștal", "codul poștal", "cod postal", "codul postal", "area code", "country code", "promo code",
    "promotional code", "discount code", "coupon code", "referral code", "dress code",
    "source code", "qr code", "bar code", "barcode", "error code", "status code", "gift code",
    "voucher code", "code promo", "code postal", "código postal", "codigo postal",
    "código promocional", "codice sconto", "codice postale", "gutscheincode", "rabattcode",
    "postleitzahl", "code review", "morse code", "tax code", "booking code", "tracking code",
    "code freeze", "reference code", "ref code", "referenzcode", "código de referencia", "zip codes", "postal codes", "codes postaux", "codici postali", "kode pos",
    "kod pocztowy", "الرمز البريدي", "رمز البريدي", "पिन कोड", "पिनकोड", "รหัสไปรษณีย์", "מיקוד",
    "poštovní", "почтовый индекс", "поштовий індекс", "mã bưu", "posta kodu", "postnummer",
    "sort code", "game pin", "pin del juego", "pin de juego", "pin partita", "pin игры", "mã phòng",
    "邮编", "郵便番号", "우편번호", "lobby code", "room code", "game code", "invite code", "party code", "friend code",
    "クーポンコード", "쿠폰코드", "쿠폰 코드", "优惠码", "優惠碼", "兑换码", "兌換碼", "codice sconto",
    // Chinese for a number (a phone's, a room's, an order's), for source code, for an encoding.
    "号码", "號碼", "代码", "代碼", "编码", "編碼",
];

/// Words that, just before a number, say it is a place (a room, a gate, a flight) or a
/// developer's reference (a line, a PR, a port): such a number is no code, whatever the
/// words around it ("the verification meeting is in room 2204", "PR 2841 changes the login
/// code"). Only words that never name where a code is entered ("the sign-in page: 482913").
#[rustfmt::skip]
const PLACES: &[&str] = &[
    "flight", "room", "suite", "gate", "seat", "bus", "train", "apt", "apartment", "platform",
    "terminal", "floor", "building", "line", "pr", "issue", "commit", "port", "build", "row",
    // A time: "log in at 0900".
    "at",
];

/// Words that, just before a number, say what else it may be (an order, a page): no code,
/// unless the words say it is one ("your OTP number: 482913").
#[rustfmt::skip]
const LABELS: &[&str] = &[
    "order", "ref", "reference", "invoice", "ticket", "booking", "case", "account", "acct",
    "tracking", "page", "model", "version", "unit", "street", "ending", "no", "number", "pedido",
    "commande", "bestellung", "ordine", "id",
];

/// Words that, just after a number, say it is an address, whatever the words around it
/// ("1200 Oak Ave").
#[rustfmt::skip]
const STREETS: &[&str] = &[
    "street", "ave", "avenue", "rd", "road", "blvd", "boulevard", "ln", "lane", "hwy", "highway",
    "pkwy", "parkway", "calle", "rue", "strasse", "straße",
];

/// Words that, just after a number, may make it an address, unless the words say it is a
/// code ("482913 via WhatsApp", "482913. Place it in the app").
#[rustfmt::skip]
const MAYBE_STREETS: &[&str] = &[
    "st", "dr", "drive", "way", "pl", "place", "ct", "court", "sq", "square", "via",
];

/// Units, just after a number: a quantity, never a code, whatever the words around it
/// ("the code is on the fridge, 1200 grams of flour", "verify: revenue was 2841 units").
#[rustfmt::skip]
const UNITS: &[&str] = &[
    "g", "grams", "kg", "mg", "ml", "l", "mm", "cm", "m", "km", "meters", "miles", "mi", "ft",
    "feet", "lbs", "pounds", "degrees", "calories", "kcal", "steps", "people", "words", "lines",
    "points", "pages", "years", "days", "hours", "minutes", "seconds", "units", "items",
    "users", "rows", "requests", "votes", "views", "likes", "followers", "ms", "sec", "secs",
    "min", "mins", "hrs", "kb", "mb", "gb", "px", "fps", "rpm", "mph", "usd", "eur", "kwh", "kw", "m3",
    "liters", "litres", "litros",
    // A time: "starts 1800 Friday", "1430 tomorrow".
    "am", "pm", "today", "tonight", "tomorrow", "monday", "tuesday", "wednesday", "thursday",
    "friday", "saturday", "sunday", "mon", "tue", "wed", "thu", "fri", "sat", "sun",
];

/// Words that make "code" a shop's: with one of these and none of [`STRONG`], a number
/// near "code" is an offer, not a sign-in.
#[rustfmt::skip]
const OFFERS: &[&str] = &[
    "checkout", "% off", "discount", "coupon", "promo", "sale", "offer", "voucher", "descuento",
    "rabatt", "réduction", "sconto", "desconto", "remise", "% de", "gratis", "off your",
    "profitez", "d'achat", "off", "bogo", "next order", "prossimo ordine", "próximo pedido",
    "proximo pedido", "prochaine commande", "nächste bestellung", "nächsten einkauf", "volgende bestelling",
    "slevový", "sleva", "slevu", "zľava", "zľavový", "2x1", "2 for 1", "panier", "al pagar", "할인", "free ", "ahorra", "compra", "rebajas", "spar ", "sparen", "bezahlen",
    "poupe", "economize", "rabat", "rabatu", "zniżk", "छूट", "risparmia", "économisez", "€ off", "$ off",
    "скидк", "промокод", "خصم", "diskon", "giảm", "折扣", "優惠", "优惠", "割引", "indirim", "έκπτωσ", "ลด",
];

/// Words of a code meant to be shared, not kept: a public meeting's ("open to all", "share
/// with anyone"). In a message that has one, its codes are no secrets, whatever else it says
/// ("Passcode: 559023").
#[rustfmt::skip]
const SHARED: &[&str] = &[
    "share with anyone", "feel free to share", "everyone welcome", "everyone is welcome", "open to all",
    "open to everyone", "public webinar", "abierto a todos", "compártelo", "compartelo", "gerne weiterleiten",
    "öffentliches webinar", "aberta a todos", "sessão pública", "iedereen welkom", "open webinar",
    "приходите все", "открытый вебинар", "مفتوحة للجميع", "ندوة عامة", "ouvert à tous", "aperto a tutti",
];

/// Words of a meeting, whose codes a public one shares ([`SHARED`]).
#[rustfmt::skip]
const MEETINGS: &[&str] = &[
    "meeting id", "meeting-id", "webinar", "zoom", "passcode", "reunión", "reunião", "réunion", "vergadering",
    "konferenz", "conferenc", "конференц", "вебинар", "الاجتماع", "ندوة", "sessão", "kenncode", "toegangscode",
    "código de acceso", "código de acesso", "код доступа", "رمز الدخول", "senha",
];

/// Where each of `words` stands in `lower` as a whole word (or phrase): not inside another
/// ("saludos" holds no "ludo", "lobbyist" no "lobby").
fn whole_words(lower: &str, words: &[&str]) -> Vec<usize> {
    let mut out: Vec<usize> = words
        .iter()
        .flat_map(|w| {
            lower.match_indices(w).map(|(i, _)| i).filter(move |&i| {
                let end = i + w.len();
                let latin = w.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
                !latin
                    || (!lower[..i].chars().next_back().is_some_and(char::is_alphanumeric)
                        && !lower[end..].chars().next().is_some_and(char::is_alphanumeric))
            })
        })
        .collect();
    out.sort_unstable();
    out
}

/// Whether the words right before a phrase deny it ("do not share with anyone").
fn negated(before: &str) -> bool {
    let words: Vec<&str> = before.split_whitespace().rev().take(2).collect();
    words.iter().any(|w| {
        matches!(
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\''),
            "not"
                | "never"
                | "don't"
                | "dont"
                | "no"
                | "nunca"
                | "nicht"
                | "niet"
                | "não"
                | "nao"
                | "ne"
                | "pas"
                | "non"
                | "nie"
                | "не"
                | "لا"
                | "asla"
                | "jangan"
                | "không"
                | "inte"
                | "ikke"
                | "älä"
        )
    })
}

/// Words of a game's lobby or room, whose code players hand round: where no word leaves
/// doubt of a sign-in ([`STRONG`]), its codes are none.
#[rustfmt::skip]
const GAMES: &[&str] = &[
    "my lobby", "lobby code", "join the lobby", "in die lobby", "room code", "party code", "party-kode",
    "partykode", "game code", "game pin", "रूम कोड", "كود الروم", "código de sala", "code de la partie",
    "raumcode", "kahoot", "ludo", "among us",
];

/// Words that name what a number identifies (an order, a booking, a parcel, a flight, a
/// card's or an account's last digits, a member, a plate, a coupon): right before a
/// number, nearer than any word for code, they make it a reference, whatever else the
/// message says.
#[rustfmt::skip]
const REFERENCES: &[&str] = &[
    // English
    "order", "booking", "reservation", "confirmation #", "confirmation number", "confirmation no",
    "tracking", "shipment", "parcel", "package", "waybill", "flight", "gate", "seat", "boarding",
    "ext", "extension", "tag", "plate", "licence", "license", "member", "membership", "loyalty",
    "rewards", "card", "ending", "ends in", "rx", "prescription", "refill", "ticket", "case", "claim",
    "policy", "invoice", "receipt", "reference", "ref", "appointment", "meeting id", "webinar",
    "submission", "warranty", "serial", "lobby", "room", "table", "zone", "zip", "postal",
    "customer", "client", "patient", "employee", "student", "coupon", "promo", "voucher", "gift",
    "discount", "pnr", "record locator", "itinerary", "account", "acct", "train", "bus", "coach",
    "platform", "route", "store", "transaction", "txn", "transfer",
    // Where to write to stop messages: a short code's own number ("Reply STOP to 89203").
    "stop", "baja", "help", "arrêt", "hilfe",
    // Spanish, Portuguese
    "pedido", "reserva", "localizador", "envío", "envio", "seguimiento", "vuelo", "puerta",
    "asiento", "extensión", "matrícula", "matricula", "socio", "tarjeta", "terminada", "cuenta",
    "receta", "cita", "factura", "cupón", "cupon", "referencia", "cliente", "rastreio",
    "rastreamento", "encomenda", "voo", "portão", "assento", "ramal", "placa", "cartão", "final",
    "conta", "receita", "consulta", "fatura", "cupom", "protocolo", "billete", "bilhete", "billet",
    "biglietto", "fahrkarte",
    // French, Italian
    "commande", "réservation", "dossier", "suivi", "colis", "vol", "porte", "siège", "poste",
    "immatriculation", "adhérent", "fidélité", "carte", "terminant", "compte", "ordonnance",
    "rendez-vous", "facture", "référence", "ordine", "prenotazione", "spedizione", "volo", "uscita",
    "posto", "interno", "targa", "tessera", "carta", "conto", "ricetta", "appuntamento", "fattura",
    "pratica", "binario", "treno",
    // German, Dutch
    "bestellung", "buchung", "buchungsnummer", "sendung", "sendungsnummer", "paket", "flug",
    "sitz", "durchwahl", "kennzeichen", "mitglied", "karte", "endend", "konto", "rezept", "termin",
    "rechnung", "kundennummer", "vorgangsnummer", "auftrag", "bestelling", "zending", "vlucht",
    "kenteken", "rekening",
    // Japanese, Chinese, Korean
    "注文番号", "予約番号", "問い合わせ番号", "問合せ番号", "伝票番号", "追跡番号", "便名", "搭乗口", "ゲート", "座席",
    "内線", "会員番号", "末尾", "口座", "処方", "クーポン", "整理番号", "受付番号", "お客様番号",
    "订单", "訂單", "运单", "運單", "单号", "單號", "航班", "登机口", "登機門", "座位", "分机", "分機", "车牌",
    "車牌", "会员", "會員", "尾号", "尾號", "账户", "帳戶", "优惠", "優惠", "兑换码", "兌換碼", "预约", "預約",
    "订位", "訂位", "编号", "編號", "末四碼", "末四码", "後四碼", "后四码", "尾数", "尾數",
    "주문번호", "예약번호", "송장", "운송장", "편명", "탑승구", "게이트", "좌석", "내선", "차량", "회원번호", "끝자리",
    "계좌", "처방", "쿠폰", "예약", "고객번호",
];

/// Whether the words just before the candidate at `at` (back to the number before it)
/// name it by a reference ([`REFERENCES`]) after the last word for code or for entering
/// one: "tracking number 9400…", "tarjeta terminada en 8264", "Codice prenotazione K2QZ7P".
fn reference_before(lower: &str, at: &Range<usize>) -> bool {
    let mut from = at.start.saturating_sub(36);
    while !lower.is_char_boundary(from) {
        from -= 1;
    }
    let mut window = &lower[from..at.start];
    // Words before another number name that one, unless this one continues its list
    // ("ZIP codes 94121, 94122 and 94116", "codes postaux 13001 à 13016"): then the words
    // before the list's first number name it.
    for _ in 0..8 {
        let Some(d) = window.rfind(|c: char| c.is_ascii_digit()) else { break };
        let between = window[d + 1..]
            .trim_matches(|c: char| c.is_whitespace() || matches!(c, ',' | '-' | '–' | '/' | '&' | '、'));
        if !LIST_WORDS.contains(&between) {
            window = &window[d + 1..];
            break;
        }
        // Back to the start of that number (after the character before it, of any width).
        let number = window[..d].char_indices().rev().find(|(_, c)| !c.is_ascii_digit());
        window = &window[..number.map_or(0, |(p, c)| p + c.len_utf8())];
    }
    // Where the last word of each list stands in the window (the one that ends last): one
    // pass of its automaton.
    let last = |list: List| {
        let words = list.words();
        AUTOMATA[list as usize]
            .find_overlapping_iter(window)
            .filter(|m| {
                let w = words[m.pattern().as_usize()];
                word_starts(window, m.start(), w) && stem_ends(window, m.end(), w)
            })
            .map(|m| (m.end(), m.start()))
            .max()
    };
    let Some((reference, reference_start)) = [List::References, List::NotSecret].into_iter().filter_map(last).max()
    else {
        return false;
    };
    let secret = [List::Strong, List::CodeWords, List::Enter].into_iter().filter_map(last).max().map(|(end, _)| end);
    // "promo code 9193": the reference ends where its word for code does.
    if secret.is_some_and(|s| reference < s) {
        return false;
    }
    let small = |part: &str| {
        let words: Vec<&str> = part.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
        words.iter().all(|w| CONNECTORS.contains(w))
    };
    // A word for code that the reference follows as its head ("código de reserva", "codice
    // prenotazione"): the reference's.
    if secret.is_some_and(|s| s <= reference_start && small(&window[s..reference_start])) {
        return true;
    }
    // The reference names the number only when nothing but small words stands between
    // ("card ending in 4471", "tracking number 9400…"); after a word for code, a verb or a
    // colon makes that word the subject ("Your verification code for your account is
    // 482913").
    let mut gap: Vec<&str> =
        window[reference..].split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    // A short prefix of letters is part of the reference's id ("ticket WK-883920", "vuelo
    // UX 1093").
    let prefix = gap.last().is_some_and(|w| w.len() <= 3 && w.chars().all(|c| c.is_ascii_alphabetic()));
    if prefix && window.ends_with(['-', ' ']) && !gap.last().is_some_and(|w| VERBS.contains(w)) {
        gap.pop();
    }
    if !gap.iter().all(|w| CONNECTORS.contains(w) || VERBS.contains(w)) {
        return false;
    }
    let verb = gap.iter().any(|w| VERBS.contains(w)) || window[reference..].contains([':', '：']);
    !(verb && secret.is_some())
}

/// Small words that may stand between a reference and its number ("ending in", "número
/// de", "番号").
#[rustfmt::skip]
const CONNECTORS: &[&str] = &[
    "number", "numbers", "no", "nr", "num", "nº", "n", "in", "en", "par", "per", "de", "del", "di", "da", "do",
    "du", "des", "of", "the", "your", "tu", "su", "votre", "ihre", "ihr", "il", "la", "le", "el", "o", "a", "at",
    "on", "with", "con", "avec", "mit", "com", "au", "al", "to", "an", "à", "acabada", "terminada", "finissant",
    "terminant", "endend", "auf", "termina", "terminando", "final", "ending", "ends", "address", "dirección",
    "adresse", "indirizzo", "endereço", "号", "號", "번호", "는", "은", "の", "番号",
];

/// Verbs that may stand between a word and the number it says ("is", "lautet", "是").
#[rustfmt::skip]
const VERBS: &[&str] = &["is", "are", "es", "est", "ist", "é", "è", "lautet", "was", "是", "为", "為", "は", "이다", "입니다"];

/// What joins the numbers of a list ("94121, 94122 and 94116"): a list's numbers share what
/// names the first.
#[rustfmt::skip]
const LIST_WORDS: &[&str] = &[
    "", "and", "or", "y", "o", "et", "ou", "und", "oder", "e", "à", "a", "to", "bis", "al", "и", "和", "及",
];

/// Whether the word `w` found at `i` in `text` starts a word there (a Latin word is not
/// taken inside another: "order" in "border").
fn word_starts(text: &str, i: usize, w: &str) -> bool {
    !w.starts_with(|c: char| c.is_ascii_alphanumeric())
        || !text[..i].chars().next_back().is_some_and(char::is_alphanumeric)
}

/// The words that leave no doubt, but for a booking's "confirmation code" ([`STRONG`]
/// holds them too).
#[rustfmt::skip]
const CONFIRMATIONS: &[&str] = &[
    "confirmation code", "code de confirmation", "código de confirmación", "codigo de confirmacion",
    "código de confirmação", "bestätigungscode", "codice di conferma", "確認番号",
];

/// Words of a booking, a table, a stay or a trip: beside them, "confirmation code" names
/// the booking ([`CONFIRMATIONS`]).
#[rustfmt::skip]
const BOOKINGS: &[&str] = &[
    "booking", "booked", "reservation", "reserved", "table", "party of", "check-in", "check in",
    "flight", "trip", "hotel", "stay", "spa", "appointment", "itinerary", "seats", "your order",
    "reserva", "réservation", "buchung", "prenotazione", "予約", "预订", "預訂", "예약",
];

/// Words that ask for something to be entered or typed: a code right after one is the
/// code ("enter R7ZK-Q2 to confirm").
#[rustfmt::skip]
const ENTER: &[&str] = &[
    "enter", "entering", "type", "input", "introduce", "introduzca", "ingresa", "ingrese",
    "saisissez", "saisir", "entrez", "eingeben", "geben sie", "inserisci", "digite", "insira",
    "informe", "voer", "введите", "введіть", "wpisz", "girin", "入力", "输入", "輸入", "입력", "tapez", "typing",
    "ingresando", "introduciendo", "inserendo", "inserindo", "digitando", "saisissant", "eingeben",
    "gib", "geben", "inserisci", "introduza", "entre com", "escribe", "escriba", "tape", "tippe", "digita",
    "put in", "key in", "punch in", "番号を入れて", "डालें", "दर्ज करें", "masukkan", "ketik", "nhập",
    // Czech, Romanian, Greek, Turkish, Arabic, Hebrew, Thai; pressing keys on a keypad
    "zadejte", "zadej", "introdu", "introduceți", "introduceti", "tastați", "tastati", "tastezi", "tastează",
    "πληκτρολογήστε", "εισάγετε", "εισαγάγετε", "yazın", "yazin", "yazarak", "girerek", "أدخل", "ادخل", "הקלד",
    "הקלידו", "הזן", "הזינו", "กรอก", "eintippen", "pencet", "tekan", "bấm", "nhấn", "vul", "syötä", "syota",
    "ange", "angiv", "indtast", "tast inn", "skriv inn",
];

/// Words that may stand between a word asking to enter something and the code: "gib dort
/// XK4-R9P ein", "enter here: …".
const FILLERS: &[&str] = &["dort", "hier", "here", "there", "aquí", "aqui", "ici", "qui", "daar", "tam", "siellä"];

/// Words for pressing or dialling keys, which ask to enter a number only in a message about
/// a door, a gate or an intercom ("Marca 2468 en el portero", "wybierz 4821 na domofonie").
#[rustfmt::skip]
const DOOR_VERBS: &[&str] = &[
    "marca", "marque", "pulsa", "digita", "drücke", "drück", "naciśnij", "wybierz", "наберите", "набери",
    "натисни", "premi", "componi",
];

/// Words asking to enter something that follow what is entered, in a language written in
/// Latin letters that puts its verb last ("Uygulamaya QT8K2M yazarak onaylayın", "1989
/// eintippen").
const ENTERED_AFTER: &[&str] = &["yazarak", "yazın", "yazin", "girin", "girerek", "girip", "eintippen", "eingeben"];

/// Words for a password: what follows one, within a few words, and looks like one (letters
/// with digits or symbols) is the password ("Wi-Fi password: Blue$ky2291", "tu contraseña
/// provisional es Mv7#kQ2x", "パスワード：Xy7#kP2q").
#[rustfmt::skip]
const PASSWORD_WORDS: &[&str] = &[
    "password", "passwort", "initialpasswort", "einmalpasswort", "contraseña", "contrasena",
    "clave", "senha", "mot de passe", "wachtwoord", "пароль", "hasło", "haslo", "şifre", "sifre",
    "pwd", "temp pw", "temporary pw", "pw", "key", "mdp", "chave", "chiave", "clé", "schlüssel", "schluessel", "palavra-passe", "passphrase", "kennwort", "startpasswort", "wlan-schlüssel",
    "wlan-schluessel", "pass:", "pw:", "key:", "clé :", "clé:", "chiave wi-fi", "chiave wifi",
    "wi-fi key", "wifi key", "network key", "mật khẩu", "كلمة المرور", "पासवर्ड", "code wifi", "code wi-fi", "wifi code", "wi-fi code", "パスワード", "密码",
    "密碼", "비밀번호", "비번", "암호", "ww:", "kata sandi", "كلمة سر", "كلمة السر", "pass wifi",
    "passwordnya", "heslo", "hesla", "รหัสผ่าน", "סיסמה", "סיסמא", "salasana", "lösenord", "adgangskode",
    "passord", "jelszó", "jelszava", "jelszavad", "kata laluan", "parolă", "parola wi-fi", "parola wifi", "lösen",
    "κωδικός", "κωδικός πρόσβασης", "προσωρινός κωδικός", "sandi:", "mk:", "parola ta", "parola temporar",
    "parola dvs", "parola de acces", "parola inițial", "parola initial", "باسورد", "wifi-kode", "wifi-koden",
    "wlan-kode", "salasanasi", "salasanan", "passordet", "lösenordet", "adgangskoden", "netzwerkschlüssel",
    "kode", "koden",
];

/// The passwords of `text` (`lower` its lowercase): the first token after a word for a
/// password ([`PASSWORD_WORDS`]), at most four short words on, of 6 to 40 characters
/// with no space, mixing letters with digits or symbols (8 digits or more alone too); a
/// link or an address is none.
fn passwords(text: &str, lower: &str) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    // A message about Wi-Fi: a plain word after its password's word is the password
    // ("the password is quietriverstone"), and "Wi-Fi: NETWORK / PASSWORD" gives one with
    // no word at all.
    let wifi = !places(lower, List::Wifi).is_empty();
    if wifi {
        out.extend(after_the_network(text, lower));
    }
    let found = AUTOMATA[List::Passwords as usize].find_overlapping_iter(lower);
    for (word_at, w) in found.map(|m| (m.start(), PASSWORD_WORDS[m.pattern().as_usize()])) {
        if !word_starts(lower, word_at, w) {
            continue;
        }
        let mut at = word_at + w.len();
        // The rest of the word ("WLAN-Passwort:" has none, "Wi-Fiのパスワードは" one), then a few
        // words; "passwords" speaks of passwords in general.
        // Only letters of the word's own script: never what could be the password itself
        // ("WiFi密码是abc12345", "pw:Blue$ky22", "パスワードはSakura2291").
        let rest: usize = if w.ends_with(|c: char| !c.is_alphanumeric()) {
            0
        } else if w.is_ascii() {
            lower[at..].chars().take_while(char::is_ascii_lowercase).map(char::len_utf8).sum()
        } else {
            lower[at..]
                .chars()
                .take_while(|c| (c.is_alphanumeric() || is_mark(*c)) && !is_password_char(*c))
                .map(char::len_utf8)
                .sum()
        };
        if w.is_ascii() && lower[at..at + rest].starts_with('s') {
            continue;
        }
        // A word that goes on in the same letters is another word ("keyboard", "passage").
        if w.is_ascii() && rest > 0 && !GOES_ON.iter().any(|g| lower[word_at..].starts_with(g)) {
            continue;
        }
        at += rest;
        // Short or many-sensed words ("key", "pw") are a password's only about Wi-Fi or
        // before a colon ("matchmaking key 4471ZED" is none).
        if WEAK_PASSWORD_WORDS.contains(&w) && !wifi && !lower[at..].trim_start().starts_with([':', '：']) {
            continue;
        }
        let mut after_verb = false;
        let mut after_wifi = false;
        for round in 0..8 {
            // What stands before the token: a colon or an opening quote introduces it.
            let skip = lower[at..]
                .find(|c: char| {
                    !(c.is_whitespace()
                        || matches!(c, ':' | '：' | '=' | '—' | '–')
                        || OPENING.contains(&c)
                        || CLOSING.contains(&c))
                })
                .unwrap_or(lower.len() - at);
            let between = &lower[at..at + skip];
            let introduced = between.contains([':', '：', '=', '—', '–']) || after_verb;
            // A quote opens the token only after a space or a colon, not inside a word
            // ("l'intranet").
            let quoted = between.char_indices().any(|(i, c)| {
                OPENING.contains(&c)
                    && !matches!(c, '(' | '（')
                    && (i > 0
                        || lower[..at].chars().next_back().is_none_or(|p| p.is_whitespace() || matches!(p, ':' | '：')))
            });
            at += skip;
            // Words of another script stand between as any word ("密碼（不含括號）：", "كلمة المرور المؤقتة").
            let foreign = lower[at..]
                .chars()
                .take_while(|c| (c.is_alphabetic() || is_mark(*c)) && !is_password_char(*c))
                .map(char::len_utf8)
                .sum::<usize>();
            if foreign > 0 {
                at += foreign;
                continue;
            }
            // A word with letters no password holds ("tạm thời của bạn là"): passed over whole.
            let word_end = at
                + lower[at..].find(|c: char| !(is_password_char(c) || c.is_alphabetic())).unwrap_or(lower.len() - at);
            let word = &lower[at..word_end];
            if word.chars().all(char::is_alphabetic) && word.chars().any(|c| !is_password_char(c)) {
                at = word_end;
                continue;
            }
            let end = at + lower[at..].find(|c: char| !is_password_char(c)).unwrap_or(lower.len() - at);
            let token = &text[at..end];
            let token = token.trim_end_matches(|c: char| {
                matches!(c, '.' | ',' | ';' | ')' | '(' | '!' | '?') || CLOSING.contains(&c)
            });
            let token = if quoted { token } else { token.trim_end_matches([':']) };
            if token.is_empty() {
                break;
            }
            // A key in groups of digits, as routers print theirs ("4471 9920 3381 5562").
            if let Some(key) = digit_groups(text, at, token.len()) {
                out.push(key);
                break;
            }
            let n = token.chars().count();
            let letters = token.chars().filter(|c| c.is_alphabetic()).count();
            let digits = token.chars().filter(|c| c.is_ascii_digit()).count();
            let symbols = token.chars().filter(|c| !c.is_alphanumeric() && *c != '-').count();
            let hyphens = token.chars().filter(|c| *c == '-').count();
            let plain = letters == n;
            // A word (letters, an apostrophe, a hyphen, a colon after) stands between,
            // unless a colon or a quote introduces it as the password: "Wachtwoord:
            // 'molen-tulp-polder'", "password is \"QWMXTRBLDF\"".
            let capitals_inside = token.chars().skip(1).any(char::is_uppercase);
            let given = (introduced || quoted) && n >= 6 && (quoted || hyphens > 0 || (capitals_inside && !plain));
            // In a message about Wi-Fi, a plain word of 8 letters or more said to be the
            // password is one ("password is quietriverstone", "Kennwort kaffeeklatsch").
            // A word saying what became of the password is none ("WLAN-Passwort geändert").
            let changed = CHANGED.iter().any(|w| token.to_lowercase().starts_with(w));
            let given = given
                || (wifi
                    && (introduced || round == 0 || after_wifi)
                    && n >= 8
                    && !changed
                    && token.chars().all(|c| c.is_lowercase() || c == '-'));
            let named = !(introduced || quoted)
                && symbols == 0
                && token.starts_with(|c: char| c.is_uppercase())
                && token.trim_end_matches(|c: char| c.is_ascii_digit()).chars().skip(1).all(char::is_lowercase)
                && token.chars().rev().take_while(char::is_ascii_digit).count() <= 2;
            let looks = !named
                && (6..=64).contains(&n)
                && ((letters > 0 && (digits > 0 || symbols > 0))
                    || (digits >= 8 && letters == 0 && symbols == 0)
                    || given)
                && !token.contains("://")
                && !is_email(token)
                && !token.starts_with("www.");
            // "Your password was changed (… call 02-123-4567)": what follows a notice that it
            // changed is none.
            let notice = CHANGED.iter().any(|c| lower[word_at..at].contains(c));
            if looks && !notice {
                let range = at..at + token.len();
                if !out.iter().any(|r| overlaps(r, &range)) {
                    out.push(range);
                }
                break;
            }
            let word = token.trim_end_matches([':', '：']);
            // A name with a number ("Play24", "o2") is a word too.
            let name = word.chars().count() <= 4
                || (word.starts_with(|c: char| c.is_uppercase())
                    && word.trim_end_matches(|c: char| c.is_ascii_digit()).chars().skip(1).all(char::is_lowercase));
            // A dash between spaces introduces what follows, as a colon does.
            if word == "-" {
                after_verb = true;
                at += 1;
                continue;
            }
            if !(word.chars().all(|c| c.is_alphabetic() || c == '\'' || c == '-') || (name && symbols == 0)) {
                break;
            }
            after_verb = PASSWORD_VERBS.contains(&word.to_lowercase().as_str());
            // "password del Wi-Fi espressodoppio": the network's word, then the password.
            after_wifi = WIFI.contains(&word.to_lowercase().as_str());
            // "clave de reservación es QTZ4KP" names a booking, not a password.
            // An account's password is one ("la password del tuo account è: …").
            let reference = REFERENCES
                .iter()
                .filter(|r| !ACCOUNTS.contains(r))
                .any(|r| lower[at..].starts_with(r) && stem_ends(lower, at + r.len(), r));
            if word.chars().count() > 20 || reference {
                break;
            }
            // A colon after the word introduces what follows.
            at += word.len();
        }
    }
    out
}

/// Words that say what became of a password, not what it is: "Passwort geändert",
/// "password changed", "mot de passe modifié".
#[rustfmt::skip]
const CHANGED: &[&str] = &[
    "changed", "updated", "reset", "expired", "expires", "forgotten", "geändert", "geaendert",
    "aktualisiert", "zurückgesetzt", "abgelaufen", "vergessen", "cambiad", "actualizad", "modifié",
    "changé", "réinitialisé", "expiré", "cambiat", "modificat", "aggiornat", "alterad", "atualizad",
    "redefinid", "gewijzigd", "veranderd", "verlopen", "vergeten", "изменен", "змінено", "zmieniono",
    "değiştirildi", "เปลี่ยน", "ændret", "endret", "ändrat", "muutettu", "megváltozott", "změněno",
];

/// Words of [`PASSWORD_WORDS`] that mean a password only about Wi-Fi or before a colon.
const WEAK_PASSWORD_WORDS: &[&str] =
    &["pw", "key", "mdp", "chave", "chiave", "clé", "schlüssel", "schluessel", "κωδικός", "kode", "koden"];

/// Verbs after which a password is said: "is", "es", "c'est", "ist", "係".
#[rustfmt::skip]
const PASSWORD_VERBS: &[&str] = &[
    "is", "es", "est", "c'est", "cest", "ist", "lautet", "é", "è", "são", "係", "是", "为", "為", "は", "는", "은",
];

/// Words for a key (a recovery key, a product key): a key of groups right after one is a
/// secret ([`keys`]). Matched at a word's end, so compounds count ("Wiederherstellungs-
/// schlüssel", "herstelsleutel").
#[rustfmt::skip]
const KEY_WORDS: &[&str] = &[
    "key", "clave", "clé", "cle", "schlüssel", "schluessel", "sleutel", "chave", "chiave", "klucz", "kunci",
    "klíč", "klic", "ключ", "anahtar", "anahtarı", "anahtarınız", "nyckel", "nøgle", "nøkkel", "avain", "khóa",
    "cheie", "cheia", "κλειδί", "מפתח", "कुंजी", "مفتاح", "キー", "鍵", "密钥", "密鑰", "金鑰", "키",
    // a recovery code's words: what a key of groups after them is
    "recovery code", "backup code", "codice di recupero", "código de recuperación", "código de recuperação",
    "code de récupération", "wiederherstellungscode", "herstelcode", "kod odzyskiwania", "код восстановления",
    "kurtarma kodu", "återställningskod", "gendannelseskode", "gjenopprettingskode", "palautuskoodi",
    "cod de recuperare", "κωδικός ανάκτησης", "קוד שחזור", "رمز الاسترداد", "kode pemulihan", "mã khôi phục",
    "복구 코드", "恢复码", "復原碼", "リカバリーコード", "รหัสกู้คืน",
];

/// The keys of `text` (`lower` its lowercase): three or more groups of four to six capitals
/// and digits, both among them, split alike by dashes or single spaces ("R4TZ-9KQM-W2XP",
/// "9QHT 2XWM RK7P"), within a few words after a word for a key ([`KEY_WORDS`]).
fn keys(text: &str, lower: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    for w in KEY_WORDS {
        for (i, _) in lower.match_indices(w) {
            let end = i + w.len();
            // A Latin word ends there ("key:", not "keyboard"); a CJK one runs into the next.
            if w.is_ascii() && lower[end..].starts_with(|c: char| c.is_alphanumeric()) {
                continue;
            }
            let mut stop = (end + 96).min(text.len());
            while !text.is_char_boundary(stop) {
                stop -= 1;
            }
            // The key's clause, or the line after it when a colon ends the clause.
            let window = &text[end..stop];
            let clause = window.split(['\n', '.', '。']).next().unwrap_or(window);
            let window = match window[clause.len()..].strip_prefix('\n') {
                Some(next) if clause.trim_end().ends_with([':', '：']) => {
                    &window[..clause.len() + 1 + next.find('\n').unwrap_or(next.len())]
                }
                _ => clause,
            };
            if let Some(key) = grouped_key(window) {
                let at = end + key.start..end + key.end;
                if !out.contains(&at) {
                    out.push(at);
                }
            }
        }
    }
    out
}

/// The first key of groups in `text` ([`keys`]), as a range of it.
fn grouped_key(text: &str) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    let is_part = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit();
    let mut i = 0;
    while i < bytes.len() {
        if is_part(bytes[i]) && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) {
            let (mut end, mut groups, mut sep) = (i, 0, None);
            loop {
                let n = bytes[end..].iter().take_while(|&&b| is_part(b)).count();
                if !(4..=6).contains(&n) || bytes.get(end + n).is_some_and(u8::is_ascii_alphanumeric) {
                    break;
                }
                end += n;
                groups += 1;
                match bytes.get(end) {
                    Some(&b @ (b'-' | b' '))
                        if sep.is_none_or(|s| s == b) && bytes.get(end + 1).copied().is_some_and(is_part) =>
                    {
                        sep = Some(b);
                        end += 1;
                    }
                    _ => break,
                }
            }
            let key = &text[i..end];
            let key = key.trim_end_matches(['-', ' ']);
            if groups >= 3 && key.bytes().any(|b| b.is_ascii_digit()) && key.bytes().any(|b| b.is_ascii_uppercase()) {
                return Some(i..i + key.len());
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    None
}

/// Words of Wi-Fi: in a message that has one, a plain word may be a password.
#[rustfmt::skip]
const WIFI: &[&str] = &[
    "wifi", "wi-fi", "wlan", "ssid", "network", "réseau", "reseau", "rete", "rede", "netzwerk", "red wi",
    "와이파이", "無線", "ネットワーク", "网络", "網路", "網絡", "мережа", "сеть", "síť", "sieć", "ağ",
];

/// Where a key of three or more groups of digits split by single spaces, 12 digits or
/// more, starts at `at` of `text` with its first group `first` bytes long.
fn digit_groups(text: &str, at: usize, first: usize) -> Option<Range<usize>> {
    let group = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    if group(&text[at..]) != first || !(3..=6).contains(&first) {
        return None;
    }
    let (mut end, mut groups, mut digits) = (at + first, 1, first);
    while let Some(rest) = text[end..].strip_prefix(' ') {
        let n = group(rest);
        if !(3..=6).contains(&n) || rest[n..].starts_with(|c: char| c.is_alphanumeric()) {
            break;
        }
        (end, groups, digits) = (end + 1 + n, groups + 1, digits + n);
    }
    (groups >= 3 && digits >= 12).then_some(at..end)
}

/// Passwords given after a Wi-Fi network's name with no word for them: after a slash
/// ("Wi-Fi: JuniperHollow_5G / smokeymtn2291"), the token after " / " (or " // ") on a
/// line with a word of [`WIFI`]; on the line after one that names the network ("Network:
/// WrenCottage_5G\nwren-cottage-42"), a line of one token.
fn after_the_network(text: &str, lower: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut named = false;
    // "WiFi:" alone on its line: the network's name is on the next, the password after it.
    let mut heading = false;
    for line in lower.split_inclusive('\n') {
        let alone = line.trim();
        let start = offset + line.len() - line.trim_start().len();
        if heading {
            heading = false;
            named = true;
            offset += line.len();
            continue;
        }
        if named
            && (6..=64).contains(&alone.chars().count())
            && alone.chars().all(is_password_char)
            && !alone.contains("://")
            && !is_email(alone)
            && alone.chars().any(|c| !c.is_alphabetic())
        {
            out.push(start..start + alone.len());
        }
        named = !places(line, List::Wifi).is_empty() && line.contains([':', '：']);
        heading = named && alone.ends_with([':', '：']) && alone.split_whitespace().count() == 1;
        named &= !heading;
        if !places(line, List::Wifi).is_empty() {
            for sep in [" // ", " / "] {
                if let Some(i) = line.find(sep) {
                    let at = offset + i + sep.len();
                    let end = at + lower[at..].find(|c: char| !is_password_char(c)).unwrap_or(lower.len() - at);
                    let token = text[at..end].trim_end_matches(['.', ',', ';', '!']);
                    let n = token.chars().count();
                    if (6..=64).contains(&n) && !token.contains("://") && !is_email(token) {
                        out.push(at..at + token.len());
                    }
                    break;
                }
            }
        }
        offset += line.len();
    }
    out
}

/// Words for a password that may go on in the same word ("passwort" in "Passworte").
const GOES_ON: &[&str] = &["passwort", "kennwort", "passphrase", "wachtwoord", "passord"];

/// Quotes and brackets that may open a password ("password «Luna%Verde%Roja»").
const OPENING: &[char] = &['"', '\'', '“', '‘', '„', '«', '「', '『', '[', '【', '(', '（'];

/// Quotes and brackets that may close one.
const CLOSING: &[char] = &['"', '\'', '”', '’', '»', '」', '』', ']', '】', ')', '“', '）'];

/// A vowel sign or other mark of a script that writes them apart from its letters (Thai,
/// the scripts of India, Arabic and Hebrew points, combining accents): part of a word.
fn is_mark(c: char) -> bool {
    matches!(u32::from(c),
        0x0300..=0x036F | 0x0591..=0x05C7 | 0x0610..=0x061A | 0x064B..=0x065F | 0x0900..=0x0903
        | 0x093A..=0x094F | 0x0951..=0x0957 | 0x0962..=0x0963 | 0x0981..=0x0983 | 0x09BC..=0x09D7
        | 0x0E31 | 0x0E34..=0x0E3A | 0x0E47..=0x0E4E)
}

/// A character a password holds: visible ASCII but the quotes and brackets around it, and
/// Latin letters ("Ipê-Amarelo-88"); never a space nor the script of the words around it
/// ("cht5k8q2ma，請登入後變更").
fn is_password_char(c: char) -> bool {
    ((c.is_ascii_graphic() && !CLOSING.contains(&c)) || (c.is_alphabetic() && u32::from(c) < 0x0250)) && c != '，'
}

/// The words for an account among [`REFERENCES`]: between a word for a password and the
/// password, they say whose it is, not that it is a reference.
const ACCOUNTS: &[&str] = &["account", "acct", "cuenta", "conta", "compte", "conto", "konto", "rekening"];

/// Whether `token` is an email address: letters before an `@`, a host of two labels or
/// more after it ("it@example.com", not "pL9@x3Vn").
fn is_email(token: &str) -> bool {
    token.split_once('@').is_some_and(|(user, host)| {
        !user.is_empty()
            && host.contains('.')
            && host.split('.').all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    })
}

/// How far (in characters) a code may stand from a word for "code" that makes it one.
const NEAR: usize = 60;

/// How far (in characters) a code may stand from the words that leave no doubt ([`STRONG`]):
/// a bank's "OTP for txn of Rs 2500.00 at … on card ending 1234 is 482913" says it far off.
const NEAR_STRONG: usize = 120;

/// Whether `sender` (a handle id) is a short code or an alphanumeric sender id: the
/// numbers and names businesses text from, which send codes and never chat.
pub fn is_short_code_sender(sender: &str) -> bool {
    let s = sender.trim();
    if s.contains('@') || s.starts_with('+') {
        return false;
    }
    let digits = s.chars().all(|c| c.is_ascii_digit());
    if digits {
        return (3..=6).contains(&s.len());
    }
    // Alphanumeric sender ids: up to 11 letters and digits (the SMS limit), a letter among
    // them, and a capital or a digit, as brands write their names ("GOOGLE", "Chase"): a
    // word in small letters is none ("unknown", which AMC stores when Messages names no
    // sender).
    let ok = |c: char| c.is_ascii_alphanumeric() || c == ' ' || c == '-' || c == '.' || c == '_';
    (2..=11).contains(&s.chars().count())
        && s.chars().all(ok)
        && s.chars().any(|c| c.is_ascii_alphabetic())
        && s.chars().any(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// The secrets in `text`, in order, none overlapping. `short_code`: the sender is a short
/// code ([`is_short_code_sender`]), whose numbers are codes whatever the words.
pub fn find(text: &str, short_code: bool) -> Vec<Found> {
    find_with(text, short_code, learned::Model::built_in())
}

/// [`find`] with another learned model (to measure one).
#[doc(hidden)]
pub fn find_with(text: &str, short_code: bool, model: &learned::Model) -> Vec<Found> {
    // The rules are tested on texts made to break them (`no_text_makes_the_finder_panic`);
    // should one still fail on a text, the whole text is hidden rather than the message
    // lost or given whole.
    std::panic::catch_unwind(|| find_in(text, short_code, model))
        .unwrap_or_else(|_| vec![Found { kind: SecretKind::Code, at: 0..text.len(), rule: Rule::Unread }])
}

/// [`find`], the rules themselves.
fn find_in(text: &str, short_code: bool, model: &learned::Model) -> Vec<Found> {
    let sent_by_short_code = short_code;
    // Most messages hold neither a run that could be a code nor a link: one pass tells.
    let runs = candidates(text);
    let apple = apple_codes(text);
    let web = text.contains("://")
        || text.as_bytes().windows(4).any(|w| w.eq_ignore_ascii_case(b"www."))
        || (text.contains('/') && text.contains('.'));
    let pairs = two_digits(text);
    if runs.is_empty() && apple.is_empty() && !web && pairs.is_empty() && !PASSWORD_WORD.is_match(text) {
        return Vec::new();
    }
    let lower = lower_in_place(text);
    let addresses = addresses(text, &lower);
    // What the learned model reads of the message, once.
    let message_sum = std::cell::OnceCell::new();
    let message = || *message_sum.get_or_init(|| model.sum(&learned::message_features(&lower)));
    // The links it judges, as many as the numbers at most.
    let judged_links = std::cell::Cell::new(0);
    let mut found = links(text, &lower, &addresses, &|at| {
        judged_links.set(judged_links.get() + 1);
        model.judges()
            && judged_links.get() <= learned::JUDGED
            && model.takes(&learned::link_features(&lower, at), message())
    });
    // Apple's form is a code whatever else the line says.
    for at in apple {
        if !found.iter().any(|f| overlaps(&f.at, &at)) {
            found.push(Found { kind: SecretKind::Code, at, rule: Rule::OriginBound });
        }
    }
    let mut strong = places(&lower, List::Strong);
    // "Feel free to …" offers nothing.
    let offer = strong.is_empty() && places(&lower, List::Offers).iter().any(|&at| !lower[..at].ends_with("feel "));
    let entering = places(&lower, List::Enter);
    let signing_in = places(&lower, List::SignIn);
    // A booking's "confirmation code" names the booking: where the only words that leave
    // no doubt are those, beside a booking's words, and nothing asks to sign in or enter
    // a code, they are a reference's.
    let confirmations = places(&lower, List::Confirmation);
    let booking = !confirmations.is_empty()
        && strong.iter().all(|at| confirmations.contains(at))
        && !places(&lower, List::Booking).is_empty()
        && entering.is_empty()
        && places(&lower, List::SignIn).is_empty();
    if booking {
        strong.clear();
    }
    // A public meeting's codes are meant to be shared, said without a "not" before: the
    // numbers near its meeting's words are none. A game's lobby codes are none where no
    // word leaves doubt of a sign-in, near a game's words. Nothing else is spared: Apple's
    // codes, passwords and keys stay found, and so does any number away from them.
    // Only a message that asks nothing of the reader (no signing in, no entering, no word
    // that leaves doubt but a meeting's own "passcode"), so that text a service echoes
    // into a real sign-in ("payee: Zoom, open to all") spares nothing.
    let asks_nothing = places(&lower, List::SignIn).is_empty()
        && entering.is_empty()
        && strong.iter().all(|&at| MEETINGS.iter().any(|m| lower[at..].starts_with(m)));
    let shared: Vec<usize> = if asks_nothing && whole_words(&lower, SHARED).iter().any(|&at| !negated(&lower[..at])) {
        whole_words(&lower, MEETINGS)
    } else {
        Vec::new()
    };
    let games: Vec<usize> = if strong.is_empty() { whole_words(&lower, GAMES) } else { Vec::new() };
    let other_codes = spans(&lower, List::NotSecret);
    let code_words = places(&lower, List::CodeWords);
    let mut doors: Vec<usize> = DOORS.iter().flat_map(|d| lower.match_indices(d).map(|(i, _)| i)).collect();
    doors.sort_unstable();
    let at_a_door = !doors.is_empty();
    let door_verbs = DOOR_VERBS
        .iter()
        .filter(|_| at_a_door)
        .flat_map(|w| lower.match_indices(w).filter(|(i, _)| word_starts(&lower, *i, w)).map(|(i, _)| i))
        .collect::<Vec<_>>();
    let mut weak: Vec<usize> = code_words
        .iter()
        .copied()
        .chain(places(&lower, List::SignIn))
        .chain(entering.iter().copied())
        .chain(door_verbs)
        .chain(places(&lower, List::DoorCodes))
        .filter(|&at| !offer && !booking && !other_codes.iter().any(|r| r.contains(&at)))
        .collect();
    weak.sort_unstable();
    // Where a word for code stands, of any kind: the words can name a candidate as the code
    // only near one (this spares most candidates of a message made of them the look).
    let mut named: Vec<usize> = code_words
        .into_iter()
        .chain(strong.iter().copied())
        .chain(places(&lower, List::DoorCodes))
        .chain(compounds(&lower))
        .collect();
    named.sort_unstable();
    // Where the words can name a candidate as the code: a door's name too ("door is 0614").
    let mut naming: Vec<usize> = named.iter().chain(&doors).copied().collect();
    naming.sort_unstable();
    // A short code's numbers are codes when its message asks for a code at all (a word for
    // code, for signing in or for entering one), or is hardly more than the number ("4471",
    // "Code: 60 18 42"): its other numbers (a deposit's, a parcel's, a flight's, a case's
    // in a few words) are none.
    let only_numbers = || !text.chars().any(char::is_alphabetic);
    let short_code = short_code && !booking && (!named.is_empty() || !weak.is_empty() || only_numbers());
    // A booking's message names its codes by the booking (above): none of them is a secret.
    let listed: Vec<(Range<usize>, Shape)> = runs.iter().map(|c| (c.at.clone(), c.shape)).collect();
    // How many numbers the learned model judged.
    let mut judged = 0;
    for c in runs.into_iter().filter(|_| !booking) {
        if close(text, &shared, &c.at, NEAR_STRONG) || close(text, &games, &c.at, NEAR) {
            continue;
        }
        // A number in an address is part of it (an article's, a question's id): an address
        // holds a secret only as a whole sign-in link, found above.
        if found.iter().any(|f| overlaps(&f.at, &c.at)) || addresses.iter().any(|a| overlaps(a, &c.at)) {
            continue;
        }
        let near_strong = close(text, &strong, &c.at, NEAR_STRONG);
        // Digits near any word for code, but a year near "code" alone ("Advent of Code
        // 2024") only when the words say it is the code ("your PIN is 1987"); capitals and
        // digits near words that leave no doubt; any of them when the words say it is the
        // code ("Steam Guard code is KQXRT"), or come straight after a word for code near
        // words that leave no doubt ("Your Steam Guard code KHVTQ").
        // Read only when the nearer words do not settle it: it looks for every word for code.
        // "Your code is 482961" is a code even beside a sale.
        let said = || {
            if !close(text, &naming, &c.at, NEAR) {
                return None;
            }
            named_right_before(&lower[..c.at.start]).or_else(|| named_right_after(&lower[c.at.end..]))
        };
        let chars = || text[c.at.clone()].chars().count();
        let rule = || {
            if said() == Some(true) {
                Rule::CalledTheCode
            } else if near_strong {
                Rule::SignInWords
            } else if short_code && c.shape == Shape::Digits {
                Rule::ShortCode
            } else {
                Rule::CodeWord
            }
        };
        let is_code = match c.shape {
            Shape::Digits if near_strong || short_code => true,
            // What a keypad takes, between its star and its hash ("Gate: punch *4521#"), in a
            // message about a door or asking to enter it.
            Shape::Digits
                if text[..c.at.start].ends_with('*')
                    && text[c.at.end..].starts_with('#')
                    && (!entering.is_empty() || at_a_door) =>
            {
                true
            }
            Shape::Digits => {
                let said = said();
                // Right after a shop's "code" ("Use code 1234 at checkout", "Use code: 4821")
                // is an offer's; "your code is 482961" beside a sale is a code.
                let near_weak = (said.is_some() && !offer) || close(text, &weak, &c.at, NEAR);
                let told = said == Some(true) && !(offer && colon_before(&lower[..c.at.start]));
                // A year is a code only at a door ("код от домофона 1987", "gate code 1989").
                let year = is_year(&text[c.at.clone()]);
                (near_weak && (!year || close(text, &doors, &c.at, NEAR))) || told
            }
            // "Your Zoom code K4T9XQ": right after "code", six or more, and no shop near.
            Shape::Capitals => {
                near_strong
                    || matches!(said(), Some(true))
                    || (said() == Some(false) && chars() >= 6 && !offer)
                    || (!entering.is_empty()
                        && (entered_right_before(&lower[..c.at.start]) || entered_right_after(&lower[c.at.end..]))
                        && !offer
                        && !booking)
            }
            // Only where a word asks to enter something at all: the look is costly.
            Shape::Word if !entering.is_empty() && entered_right_before(&lower[..c.at.start]) && !offer && !booking => {
                true
            }
            Shape::Word | Shape::Long => match said() {
                Some(told) => told || near_strong,
                None => false,
            },
        };
        // "Código para añadir tu robot aspirador: «b73akj»", "Код для подключения
        // телевизора: VVBE-NMRZ. Введите его": what the words say the code is for gives it,
        // where the message asks to enter something or leaves no doubt.
        let is_code = is_code
            || (matches!(c.shape, Shape::Capitals | Shape::Word)
                && (near_strong || !entering.is_empty())
                && !offer
                && !booking
                && {
                    let (rest, told) = giving(&lower[..c.at.start]);
                    told && named_in_clause(rest, false)
                });
        // "If this was you, use the following to continue:\n\nF7XQ2": a line of its own,
        // presented by a colon, in a message whose words leave no doubt or ask to enter it.
        let is_code = is_code
            || (matches!(c.shape, Shape::Digits | Shape::Capitals)
                && (!strong.is_empty() || !entering.is_empty())
                && !offer
                && !booking
                && presented(text, &c.at));
        // "Código de acesso\nQ2T9KR\nNão o partilhe": a line of its own near a word for code.
        let is_code = is_code
            || (matches!(c.shape, Shape::Digits | Shape::Capitals)
                && own_line(text, &c.at)
                && (near_strong || close(text, &named, &c.at, NEAR))
                && !offer
                && !booking);
        // "Use 7KX4QP to finish signing in": used, for signing in or confirming.
        let is_code = is_code
            || (c.shape == Shape::Capitals
                && used_right_before(&lower[..c.at.start])
                && close(text, &signing_in, &c.at, NEAR)
                && !offer
                && !booking);
        // "Here's what you need to sign in from a new device: 7QJ2X": given by the colon that
        // ends a sentence about signing in.
        let is_code = is_code
            || (c.shape == Shape::Capitals
                && colon_before(&lower[..c.at.start])
                && in_the_sentence(&lower[..c.at.start], &signing_in)
                && !offer
                && !booking);
        // What the rules leave, the learned model may take; never 9 or 10 digits, a phone's or
        // an account's shape, which only the words calling it the code make one.
        let learned = !is_code && !offer && c.shape != Shape::Long && model.judges() && {
            judged += 1;
            judged <= learned::JUDGED && model.takes(&learned::features(&lower, &c.at, sent_by_short_code), message())
        };
        if !is_code && !learned {
            continue;
        }
        // What the words right before it name it by (an order, a card's last digits, a
        // flight), nearer than any word for code: a reference, none ("Código de reserva
        // XQ4P7M", "card ending in 4471").
        if said() != Some(true) && reference_before(&lower, &c.at) {
            continue;
        }
        // A room or an address is no code unless the words call it the code ("[LINE]
        // 573931 is your LINE verification code"); an order is none unless they leave no
        // doubt. Read last: it is the costliest look.
        // A keypad's "*4521#" is typed, whatever words come after it ("then drive").
        let keyed = text[..c.at.start].ends_with('*') && text[c.at.end..].starts_with('#');
        match if keyed { Label::None } else { labelled(&lower, &c.at) } {
            Label::Quantity => continue,
            Label::Place if said() != Some(true) => continue,
            Label::Other if !near_strong => continue,
            _ => {}
        }
        let rule = if learned { Rule::Learned } else { rule() };
        found.push(Found { kind: SecretKind::Code, at: c.at, rule });
    }
    // A list of codes ("backup codes: 48201937 77110264 30589912"): the next of the same
    // shape and length, right after a code found (a space, a comma, a dot or a line between),
    // is one too.
    let mut i = 0;
    while i + 1 < listed.len() {
        let ((at, shape), (next, next_shape)) = (&listed[i], &listed[i + 1]);
        let between = &text[at.end..next.start];
        let code = |r: &Range<usize>| found.iter().any(|f| f.kind == SecretKind::Code && f.at == *r);
        if code(at)
            && !code(next)
            && shape == next_shape
            && text[at.clone()].chars().count() == text[next.clone()].chars().count()
            && between.chars().count() <= 3
            && between.chars().all(|c| c.is_whitespace() || matches!(c, ',' | '·' | ';' | '/' | '|'))
        {
            let rule = found.iter().find(|f| f.at == *at).map_or(Rule::CodeWord, |f| f.rule);
            found.push(Found { kind: SecretKind::Code, at: next.clone(), rule });
        }
        i += 1;
    }
    for at in number_matches(&lower, pairs) {
        if !found.iter().any(|f| overlaps(&f.at, &at)) {
            found.push(Found { kind: SecretKind::Code, at, rule: Rule::SignInWords });
        }
    }
    for at in passwords(text, &lower).into_iter().chain(keys(text, &lower)) {
        let link = |f: &Found| f.kind == SecretKind::Link && overlaps(&f.at, &at);
        if !found.iter().any(link) && !addresses.iter().any(|a| overlaps(a, &at)) {
            // A password holds what looked like a code in it ("Blue$ky2291"): it is one secret.
            found.retain(|f| !overlaps(&f.at, &at));
            found.push(Found { kind: SecretKind::Code, at, rule: Rule::Password });
        }
    }
    if found.is_empty()
        && addresses.is_empty()
        && let Some(at) = alone(text, &lower)
    {
        found.push(Found { kind: SecretKind::Code, at, rule: Rule::HandedOver });
    }
    repeated(text, &lower, &mut found);
    found.sort_by_key(|f| f.at.start);
    found
}

/// Each candidate of `text` and its features for the learned model ([`learned::features`]),
/// as the finder reads them: what `examples/learn.rs` learns from.
#[doc(hidden)]
pub fn candidate_features(text: &str, short_code: bool) -> Vec<(Range<usize>, SecretKind, Vec<u32>)> {
    let lower = lower_in_place(text);
    let message = learned::message_features(&lower);
    let codes = candidates(text).into_iter().map(|c| {
        let f = [learned::features(&lower, &c.at, short_code), message.clone()].concat();
        (c.at, SecretKind::Code, f)
    });
    let links = addresses(text, &lower).into_iter().map(|at| {
        let f = [learned::link_features(&lower, &at), message.clone()].concat();
        (at, SecretKind::Link, f)
    });
    codes.chain(links).collect()
}

/// Whether one of `places` (sorted) stands in the last sentence of `before`.
fn in_the_sentence(before: &str, places: &[usize]) -> bool {
    let start = before.rfind(['.', '!', '?', '\n', '。']).map_or(0, |i| i + 1);
    places.iter().any(|&p| p >= start && p < before.len())
}

/// Whether the candidate at `at` is a line of its own after a line ending in a colon
/// ("use the following to continue:\n\nF7XQ2"), blank lines between.
fn own_line(text: &str, at: &Range<usize>) -> bool {
    let before = &text[..at.start];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at.end..].find('\n').map_or(text.len(), |i| at.end + i);
    line_start > 0
        && text[line_start..at.start].trim().is_empty()
        && text[at.end..line_end].trim_matches(|c: char| c.is_whitespace() || c == '#').is_empty()
}

/// Words that tell the reader to use something: right before a code, with signing in or
/// confirming near, it is the code ("Use 7KX4QP to finish signing in", "Bruk KM7Q2X for å
/// bekrefte").
#[rustfmt::skip]
const USE: &[&str] = &[
    "use", "usa", "utilisez", "utilise", "verwende", "verwenden sie", "gebruik", "użyj", "kullan", "gunakan",
    "sử dụng", "используйте", "bruk", "använd", "brug", "käytä", "utilizza", "utilize",
];

/// Whether `before` (the lowercase text before a candidate) ends with a word of [`USE`],
/// quotes aside.
fn used_right_before(before: &str) -> bool {
    let rest = before.trim_end().trim_end_matches(['"', '\'', '«', '“', '„', '「']).trim_end();
    USE.iter().any(|w| rest.ends_with(w) && word_starts(rest, rest.len() - w.len(), w))
}

fn presented(text: &str, at: &Range<usize>) -> bool {
    let before = &text[..at.start];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at.end..].find('\n').map_or(text.len(), |i| at.end + i);
    let alone = text[line_start..at.start].trim().is_empty() && text[at.end..line_end].trim().is_empty();
    alone && before[..line_start].trim_end().ends_with([':', '：'])
}

/// The numbers a sign-in asks the reader to pick or type in an app to approve it (number
/// matching: "To approve, type 37 in the Authenticator app", "selecciona el número 58",
/// "앱에서 숫자 64를 선택하세요"): two digits alone, right after a word that asks to pick,
/// tap or type a number, in a message about signing in in an app.
fn number_matches(lower: &str, pairs: Vec<Range<usize>>) -> Vec<Range<usize>> {
    let in_an_app = || {
        APPS.iter()
            .any(|w| lower.match_indices(w).any(|(i, _)| word_starts(lower, i, w) && word_ends(lower, i + w.len(), w)))
    };
    if pairs.is_empty() || !LOGGING_IN.iter().any(|w| lower.contains(w)) || !in_an_app() {
        return Vec::new();
    }
    pairs.into_iter().filter(|at| picked_right_before(&lower[..at.start])).collect()
}

/// Where two ASCII digits stand alone in `text`: not in a longer number, a time, a price
/// or a word ("64를" is alone: a Korean particle follows).
fn two_digits(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    // A full stop or a comma ends a sentence after it, but not before more digits ("12.50").
    let apart = |k: Option<usize>| {
        k.and_then(|k| bytes.get(k)).is_none_or(|b| {
            !b.is_ascii_alphanumeric()
                && *b != b':'
                && *b != b'/'
                && !(matches!(b, b'.' | b',') && bytes.get(k.map_or(0, |k| k + 1)).is_some_and(u8::is_ascii_digit))
        })
    };
    (0..bytes.len().saturating_sub(1))
        .filter(|&i| {
            bytes[i].is_ascii_digit()
                && bytes[i + 1].is_ascii_digit()
                && (i == 0 || (apart(Some(i - 1)) && !matches!(bytes[i - 1], b'.' | b',')))
                && apart(Some(i + 2))
        })
        .map(|i| i..i + 2)
        .collect()
}

/// Whether `before` (the lowercase text before a number) ends with a word that asks to
/// pick, tap or type a number ([`PICK`]), as a whole word.
fn picked_right_before(before: &str) -> bool {
    let rest = before.trim_end().trim_end_matches(['"', '\'', '«', '“', '「']).trim_end();
    PICK.iter().any(|w| rest.ends_with(w) && word_starts(rest, rest.len() - w.len(), w))
}

/// Words right before a number a sign-in asks to pick ([`number_matches`]).
#[rustfmt::skip]
const PICK: &[&str] = &[
    "type", "tap", "select", "choose", "pick", "enter", "number", "número", "numero", "getal", "nummer",
    "zahl", "nombre", "chiffre", "numéro", "число", "цифру", "номер", "숫자", "数字", "數字", "番号",
    "angka", "nomor", "số", "so", "sayı", "sayıyı", "numara", "liczbę", "numer", "الرقم", "رقم",
];

/// Words for the app a number is picked in ([`number_matches`]): "in the Authenticator
/// app", "open Okta Verify", "앱에서".
#[rustfmt::skip]
const APPS: &[&str] = &[
    "app", "apps", "authenticator", "verify", "手机", "手機", "aplikasi", "ung dung", "ứng dụng", "앱", "アプリ", "应用",
    "應用", "приложени", "застосунк", "uygulama", "aplikac", "aplicación", "aplicacion", "aplicativo",
    "application", "applicazione", "anwendung",
];

/// Words of signing in or approving one, for [`number_matches`].
#[rustfmt::skip]
const LOGGING_IN: &[&str] = &[
    "sign-in", "sign in", "signing in", "log in", "login", "logging in", "approve", "iniciar sesión",
    "inicio de sesión", "iniciar sesion", "accesso", "accedere", "inloggen", "loggen", "aanmelden", "anmeld",
    "connexion", "connecter", "entrar", "acesso", "вход", "войти", "giriş", "logowa", "로그인",
    "masuk", "đăng nhập", "dang nhap", "ログイン", "サインイン", "登录", "登入", "登錄", "aprobar",
    "approuver", "genehmig", "autorizar", "autorizza", "goedkeuren", "승인", "onayla",
];

/// A code said once is hidden wherever it stands again in the message: in a link
/// ("…/v/482971"), inside another word, in other letter case, or with other spaces or
/// hyphens between its characters. `lower` is `text` in lowercase ([`lower_in_place`]).
/// `found` holds no overlaps, before and after, and is sorted after. The first [`REPEATS`]
/// different codes of the message are looked for: a message with more is a list, each of
/// whose codes is found on its own.
fn repeated(text: &str, lower: &str, found: &mut Vec<Found>) {
    let mut keys: Vec<String> = Vec::new();
    for f in found.iter().filter(|f| f.kind == SecretKind::Code) {
        let key: String = lower[f.at.clone()].chars().filter(|c| is_code_char(*c)).collect();
        if key.chars().count() >= 4 && !keys.contains(&key) {
            keys.push(key);
        }
        if keys.len() == REPEATS {
            break;
        }
    }
    if keys.is_empty() {
        return;
    }
    found.sort_by_key(|f| f.at.start);
    let chars: Vec<(usize, char)> = lower.char_indices().collect();
    let mut more: Vec<Range<usize>> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !is_code_char(chars[i].1) {
            i += 1;
            continue;
        }
        // A run of code characters, one space or hyphen between two of them allowed.
        let mut run: Vec<(usize, char)> = Vec::new();
        let mut j = i;
        loop {
            while j < chars.len() && is_code_char(chars[j].1) {
                run.push(chars[j]);
                j += 1;
            }
            if j + 1 < chars.len() && splits_groups(chars[j].1) && is_code_char(chars[j + 1].1) {
                j += 1;
                continue;
            }
            break;
        }
        let joined: String = run.iter().map(|(_, c)| *c).collect();
        // Where each character of `joined` starts, to find the run's character of a match.
        let starts: Vec<usize> = joined.char_indices().map(|(b, _)| b).collect();
        for key in &keys {
            for (byte_at, _) in joined.match_indices(key.as_str()) {
                let first = starts.partition_point(|&b| b < byte_at);
                let (start, _) = run[first];
                let (last, c) = run[first + key.chars().count() - 1];
                let at = start..last + c.len_utf8();
                let k = found.partition_point(|f| f.at.end <= at.start);
                if found.get(k).is_none_or(|f| f.at.start >= at.end) {
                    more.push(at);
                }
            }
        }
        i = j;
    }
    // Two codes may share characters: what they cover together is one (and, as neither
    // overlaps a secret found before, so does none of it).
    more.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::new();
    for at in more {
        match merged.last_mut() {
            Some(last) if at.start < last.end => last.end = last.end.max(at.end),
            _ => merged.push(at),
        }
    }
    debug_assert!(merged.iter().all(|r| text.is_char_boundary(r.start) && text.is_char_boundary(r.end)));
    found.extend(merged.into_iter().map(|at| Found { kind: SecretKind::Code, at, rule: Rule::Repeated }));
    found.sort_by_key(|f| f.at.start);
}

/// How many different codes of a message [`repeated`] looks for again.
const REPEATS: usize = 16;

/// The words a reply hands a number over with, before it ([`alone`]).
#[rustfmt::skip]
const HANDING: &[&str] = &[
    "", "ok", "okay", "k", "it's", "its", "it", "is", "here", "you", "go", "sure", "got", "the", "code",
    "says", "said", "c'est", "es", "yes", "yeah", "yep", "thx", "thanks", "that's", "thats", "try",
];

/// A short message that hands over a number of 6 to 8 digits and nothing else of note (a
/// few words, punctuation, an emoji): a code given in answer to another message ("what is
/// the code?" "ok it's 482980 👍"), which no word near it says. Fewer digits are too often
/// a time, a room or a zip code ("1430", "94110"); a number a word before or after it
/// names (a room, an order, people) is none.
fn alone(text: &str, lower: &str) -> Option<Range<usize>> {
    const WORDS: usize = 5;
    if text.len() > 60 || text.split_whitespace().count() > WORDS {
        return None;
    }
    let runs = candidates(text);
    let [run] = runs.as_slice() else { return None };
    let digits = text[run.at.clone()].chars().filter(|c| is_digit(*c)).count();
    let others = text[..run.at.start].chars().chain(text[run.at.end..].chars()).any(is_digit);
    // Only words that hand a number over may come before it ("ok it's", "here you go:"):
    // "Order: 48213759" and "The rent is 482913" say what it is. "112-108" is a score.
    let handing = |w: &str| HANDING.contains(&w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\''));
    let label = !lower[..run.at.start].split_whitespace().all(handing);
    let joined = text[run.at.clone()].chars().all(is_digit);
    let handed = run.shape == Shape::Digits
        && (6..=8).contains(&digits)
        && joined
        && !others
        && !label
        && labelled(lower, &run.at) == Label::None;
    handed.then(|| run.at.clone())
}

/// The secrets in a name (a channel's, a thread's, a sender's): read as any text, never as
/// a short code's message.
pub fn in_name(name: &str) -> Vec<Found> {
    find(name, false)
}

/// `text` with each of `found` replaced by its marker.
pub fn hide(text: &str, found: &[Found]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for f in found {
        debug_assert!(f.at.start >= from, "secrets never overlap");
        if f.at.start < from || f.at.end > text.len() {
            continue;
        }
        out.push_str(&text[from..f.at.start]);
        out.push_str(f.kind.marker());
        from = f.at.end;
    }
    out.push_str(&text[from..]);
    out
}

/// Whether an agent's search for `terms` (each already [`fold`]ed) finds `text` in what the
/// agent is given: every term in the text with its secrets taken out. A message matched
/// only through a hidden code or link is not found, so a search never tells whether a
/// message holds a code.
pub fn found_unhidden(text: &str, short_code: bool, terms: &[String]) -> bool {
    let found = find(text, short_code);
    if found.is_empty() {
        return true;
    }
    let mut rest = String::with_capacity(text.len());
    let mut from = 0;
    for f in &found {
        // Secrets never overlap ([`find`]); should two, the first stands for both.
        if f.at.start < from {
            continue;
        }
        rest.push_str(&text[from..f.at.start]);
        rest.push('\u{1}');
        from = f.at.end;
    }
    rest.push_str(&text[from..]);
    let rest = fold(&rest);
    terms.iter().all(|t| rest.contains(t.as_str()))
}

/// Text as search compares it: lowercase, accents taken off (as the index's
/// `remove_diacritics 2`).
pub fn fold(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    text.nfd().filter(|c| !unicode_normalization::char::is_combining_mark(*c)).flat_map(char::to_lowercase).collect()
}

/// `text` in lowercase where a character's lowercase takes the same bytes, as it is
/// elsewhere: every position in it is the same position in `text`.
pub fn lower_in_place(text: &str) -> String {
    text.chars()
        .map(|c| {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some(l), None) if l.len_utf8() == c.len_utf8() => l,
                _ => c,
            }
        })
        .collect()
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

/// A word list the finder looks for in a text.
#[derive(Clone, Copy)]
enum List {
    Strong,
    CodeWords,
    SignIn,
    Offers,
    LinkContext,
    NotSecret,
    Enter,
    Confirmation,
    Booking,
    References,
    Passwords,
    Wifi,
    DoorCodes,
}

impl List {
    const ALL: [List; 13] = [
        List::Strong,
        List::CodeWords,
        List::SignIn,
        List::Offers,
        List::LinkContext,
        List::NotSecret,
        List::Enter,
        List::Confirmation,
        List::Booking,
        List::References,
        List::Passwords,
        List::Wifi,
        List::DoorCodes,
    ];

    fn words(self) -> &'static [&'static str] {
        match self {
            List::Strong => STRONG,
            List::CodeWords => CODE_WORDS,
            List::SignIn => SIGN_IN,
            List::Offers => OFFERS,
            List::LinkContext => LINK_CONTEXT,
            List::NotSecret => NOT_SECRET,
            List::Enter => ENTER,
            List::Confirmation => CONFIRMATIONS,
            List::Booking => BOOKINGS,
            List::References => REFERENCES,
            List::Passwords => PASSWORD_WORDS,
            List::Wifi => WIFI,
            List::DoorCodes => DOOR_CODES,
        }
    }
}

/// Whether a text may hold a word for a password, in any letter case: the look that lets
/// a message with no number and no link pass without more (a table computed from
/// [`PASSWORD_WORDS`] the first time, never written after).
static PASSWORD_WORD: std::sync::LazyLock<aho_corasick::AhoCorasick> = std::sync::LazyLock::new(|| {
    // Capitals of other scripts too ("ПАРОЛЬ", "HASŁO").
    let words = PASSWORD_WORDS.iter().flat_map(|w| [w.to_string(), w.to_uppercase()]);
    aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(words)
        .unwrap_or_else(|e| unreachable!("word lists build: {e}"))
});

/// Each list's automaton (Aho-Corasick), in the order of [`List::ALL`]: a table computed
/// from the constants above the first time a text is read, never written after.
static AUTOMATA: std::sync::LazyLock<Vec<aho_corasick::AhoCorasick>> = std::sync::LazyLock::new(|| {
    List::ALL
        .iter()
        .map(|l| aho_corasick::AhoCorasick::new(l.words()).unwrap_or_else(|e| unreachable!("word lists build: {e}")))
        .collect()
});

/// Where each word of `list` starts in `lower`, in order. One pass over the text for all
/// the words: a long message costs one read, not one per word.
fn places(lower: &str, list: List) -> Vec<usize> {
    let words = list.words();
    let mut out = Vec::new();
    for m in AUTOMATA[list as usize].find_overlapping_iter(lower) {
        let (at, w) = (m.start(), words[m.pattern().as_usize()]);
        let ascii_word = w.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
        // A Latin word counts only as a word, not inside another ("decode", "pinch").
        let starts = !ascii_word || !lower[..at].chars().next_back().is_some_and(char::is_alphanumeric);
        if starts && word_ends(lower, m.end(), w) {
            out.push(at);
        }
    }
    out.sort_unstable();
    out
}

/// Whether the word `w` found in `text` ending at `end` ends there: a long word may take
/// an ending ("vahvistuskoodisi", "verifications"); a short one must end there ("pin", not
/// "pinch"; "voo", not "voor").
fn word_ends(text: &str, end: usize, w: &str) -> bool {
    let last_alnum = w.chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric()) && w.len() < 10;
    !last_alnum || !text[end..].chars().next().is_some_and(char::is_alphanumeric)
}

/// Whether the word `w` found in `text` ending at `end` ends there, or is long enough to be
/// a stem that takes endings ("reserva" in "reservación"; "voo" is not in "voor").
fn stem_ends(text: &str, end: usize, w: &str) -> bool {
    w.len() >= 5 || word_ends(text, end, w)
}

/// Where each word of `list` stands in `lower`, whole or inside another word.
fn spans(lower: &str, list: List) -> Vec<Range<usize>> {
    AUTOMATA[list as usize].find_overlapping_iter(lower).map(|m| m.start()..m.end()).collect()
}

/// Whether one of `places` (sorted) is within `near` characters of the span `c`.
fn close(text: &str, places: &[usize], c: &Range<usize>, near: usize) -> bool {
    let i = places.partition_point(|&p| p < c.start);
    let before = i.checked_sub(1).map(|k| places[k]);
    let after = places.get(i).copied();
    [before, after].into_iter().flatten().any(|p| distance(text, p, c, near) <= near)
}

/// The endings that make a compound a word for code ("Abholcode", "Säkerhetskod",
/// "Noutokoodi", "kapukód"): [`named_right_before`] reads them.
const COMPOUND_ENDINGS: &[&str] = &["code", "codes", "kode", "kod", "koodi", "kód", "koden", "kodu", "koder"];

/// What a compound's first part says the code is when it is no secret: an error's, a shop's,
/// a booking's, a parcel's, a place's, a game's ("Fehlercode", "kortingscode",
/// "Buchungscode", "Alennuskoodi", "Kuponkód", "postcode").
#[rustfmt::skip]
const NOT_SECRET_COMPOUNDS: &[&str] = &[
    "fehler", "error", "rabatt", "rabat", "korting", "alennus", "kupon", "kupong", "coupon", "gutschein",
    "aktions", "kampanj", "promo", "bar", "qr", "post", "zip", "quell", "source", "vorwahl", "länder",
    "sconto", "descuento", "referral", "empfehlung", "einladung", "invite", "gift", "geschenk", "buchung",
    "reservierung", "boeking", "reservering", "booking", "bokning", "varaus", "foglalás", "sendung", "tracking",
    "sporing", "seuranta", "kedvezmény", "lobby", "spiel", "game", "raum", "ryhmä", "lahja", "ajándék",
    "adgangs", "tilgangs",
];

/// Where each compound ending in a word for code stands in `lower` ([`COMPOUND_ENDINGS`]),
/// at the start of its word: "abholcode", not "code" alone, nor a compound that names
/// another kind of code ([`NOT_SECRET_COMPOUNDS`]).
fn compounds(lower: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in lower.char_indices().chain(std::iter::once((lower.len(), ' '))) {
        match (c.is_alphabetic() || c == '-', start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                let word = &lower[s..i];
                if COMPOUND_ENDINGS.iter().any(|e| word.len() > e.len() + 2 && word.ends_with(e))
                    && !NOT_SECRET_COMPOUNDS.iter().any(|n| word.starts_with(n))
                {
                    out.push(s);
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Whether `before` (the lowercase text before a candidate) ends with a word for code,
/// unless another kind of code ("promo code SAVE20"): `Some(true)` when "is" or a colon
/// then says the candidate is the code ("Steam Guard code is: KQXRT"), `Some(false)` when
/// it only follows the word ("code 482913", "CHECK THE CODE AGAIN").
fn named_right_before(before: &str) -> Option<bool> {
    let (rest, told) = giving(before);
    let word_ends = |w: &&str| {
        rest.ends_with(*w)
            && (!w.starts_with(|c: char| c.is_ascii_alphanumeric())
                || !rest[..rest.len() - w.len()].chars().next_back().is_some_and(char::is_alphanumeric))
    };
    // A compound ending in a word for code ("Kopplungscode", "Bestätigungs-Code",
    // "Abholcode", "Säkerhetskod", "Noutokoodi", "kapukód") names one.
    let compound = compounds(last_clause(rest, &[' ', '\n'], 64)).first() == Some(&0);
    let named = (CODE_WORDS.iter().chain(STRONG).chain(DOOR_CODES).any(word_ends) || compound)
        && !NOT_SECRET.iter().any(|n| rest.ends_with(n));
    if named {
        // What a door, a gate or a lock takes is the code, said with a verb or not ("Digicode
        // B4712", "combo 7-3-1-9").
        return Some(told || DOOR_CODES.iter().any(word_ends));
    }
    // A door or a gate given a number by a verb or a colon: "door is 0614", "portão: 1357#".
    // Not another kind of code said of the door ("the zip code for the garage is 94110").
    let clause = last_clause(rest, &['.', ',', ';', '!', '?', '。', '，', '\n'], 80);
    if told && DOORS.iter().filter(|d| d.len() >= 4).any(word_ends) && !NOT_SECRET.iter().any(|n| clause.contains(n)) {
        return Some(true);
    }
    // "The code of the front door is 4821", "O código do portão é 2580".
    (told && named_in_clause(rest, true)).then_some(true)
}

/// `before` (the lowercase text before a candidate) less what gives the candidate: quotes
/// or a bracket around it, which say nothing ("code is [NVL7QW]"), and a verb or a colon
/// ("is:" and "は：" say it twice); and whether one gave it.
fn giving(before: &str) -> (&str, bool) {
    // A keypad's star opens what is typed after it ("Gate keypad: *5067#").
    let mut rest = before.trim_end().trim_end_matches(['[', '"', '\'', '«', '“', '„', '「', '(', '*', '#']).trim_end();
    let mut told = false;
    for _ in 0..2 {
        // "is" in the languages the words cover: "ovikoodi on 7043", "koden är", "koden er",
        // "kód je", "kod jest", "codul este", "密碼係", "代碼是".
        let tails = [
            ":", "：", "=", " c'est", " c’est", " is", " es", " est", " ist", " é", " è", "は", " lautet", " on",
            " är", " er", " je", " jest", " este", " là", "是", "係", "為", "为",
        ];
        let Some(tail) = tails.into_iter().find(|t| rest.ends_with(t)) else { break };
        rest = rest[..rest.len() - tail.len()].trim_end();
        told = true;
    }
    (rest, told)
}

/// Whether among the last words of `rest` (the text before a candidate, less the verb or
/// colon that gives it), all but the last, stands a word for code, or a compound ending in
/// one, the rest naming what it is for ("Código para añadir tu robot aspirador:", "Kopplungscode für den Access
/// Point lautet"): with `doors`, only a door's, a gate's or a lockbox's; else anything but a
/// reference, a place, an offer or another kind of code ("código de reserva:").
fn named_in_clause(rest: &str, doors: bool) -> bool {
    let clause = last_clause(rest, &['.', ',', ';', '!', '?', '。', '，', '\n'], 80);
    let phrase: Vec<&str> = clause.split_whitespace().rev().take(5).collect();
    let bare = |w: &&str| w.trim_matches(|c: char| !c.is_alphanumeric()).to_owned();
    let opens = phrase.iter().skip(1).any(|w| {
        let w = bare(w);
        CODE_WORDS.contains(&w.as_str())
            || DOOR_CODES.contains(&w.as_str())
            || (w.chars().count() > 6 && ["code", "kode", "kod"].iter().any(|c| w.ends_with(c)))
    });
    if !opens {
        return false;
    }
    let joined = format!(" {} ", phrase.iter().rev().copied().collect::<Vec<_>>().join(" "));
    // Whole words, or stems that take endings: "voo" (a flight) is not in "voor".
    let says = |list: &[&str]| {
        list.iter().any(|r| {
            joined.match_indices(r).any(|(i, _)| word_starts(&joined, i, r) && stem_ends(&joined, i + r.len(), r))
        })
    };
    if says(NOT_SECRET) || says(OFFERS) {
        return false;
    }
    if doors {
        // "Digicode de l'immeuble :": a word that alone names what a door takes opens it.
        return phrase.iter().skip(1).any(|w| DOOR_CODES.contains(&bare(w).as_str()))
            || phrase.iter().any(|w| DOORS.iter().any(|d| bare(w).starts_with(d)));
    }
    !says(REFERENCES) && !says(BOOKINGS) && !says(PLACES) && !says(LABELS)
}

/// Words for a door, a gate or a lockbox: "the code of the front door is 4821" gives a code
/// the reader enters ([`named_right_before`]).
#[rustfmt::skip]
const DOORS: &[&str] = &[
    "door", "gate", "lockbox", "garage", "entrance", "porte", "portail", "portão", "portao", "portone",
    "cancello", "portón", "porton", "portal", "tür", "haustür", "deur", "poort", "kapı", "дверь",
    "домофон", "drzwi", "furtk", "brama", "keypad", "keybox", "cadeado", "candado", "cadenas",
    "lucchetto", "schlüsselbox", "sleutelkluis", "ключниц", "alarm", "safe", "portero", "hoftor", "gartentor",
    "einfahrt", "interfon", "poart", "brank", "brán", "vchod", "pintu", "cổng", "cửa", "πόρτα", "εξώπορτα",
    "البوابة", "بوابة", "गेट", "השער", "שער הכניסה", "ประตู", "citofono", "interphone", "intercom", "domofon",
];

/// Words that name, alone, what a person types at a door, a gate, a lock or an alarm
/// ("garage keypad is 0412", "combo 7-3-1-9", "Digicode : 47B29", "オートロックは「0729」"):
/// right before a number they call it the code, as a word for code does.
#[rustfmt::skip]
const DOOR_CODES: &[&str] = &[
    "keypad", "combo", "combination", "digicode", "lockbox", "lock box", "keybox", "key box",
    "keysafe", "key safe", "alarm", "intercom", "cadeado", "candado", "cadenas", "lucchetto",
    "schlüsselbox", "schlüsselsafe", "schlüsseltresor", "sleutelkluis", "sleutelkluisje",
    "ключница", "ключницы", "ключниці", "кодовый замок", "オートロック", "暗証番号", "도어락", "비번",
    "mật khẩu cửa", "kunci pintu", "citofono", "domofon", "interphone",
    // what a lock's combination is called, and a key box's, in more languages
    "combinación", "combinacion", "combinação", "combinacao", "combinaison", "kombination", "combinazione",
    "комбинация", "комбинацию", "kombinasi", "kombinasinya", "szyfr", "zahlenschloss", "nøkkelboks",
    "nøglebox", "nyckelbox", "キーボックス", "الرقم السري", "cassetta di sicurezza", "сейф", "pakkeboks",
    "paketbox", "paczkomat", "cajita",
];

/// Whether `before` (the lowercase text before a candidate) ends with a word that asks for
/// it to be entered ([`ENTER`]): "entering QX7-R2M", "inserisci WQ4-7TP", "请在页面输入 KX7Q2P".
fn entered_right_before(before: &str) -> bool {
    let rest = before.trim_end().trim_end_matches(['[', '"', '\'', '«', '“', '„', '「', '(']).trim_end();
    // One filler word between ("gib dort XK4-R9P ein").
    let rest = FILLERS
        .iter()
        .find(|f| rest.ends_with(*f) && word_starts(rest, rest.len() - f.len(), f))
        .map_or(rest, |f| rest[..rest.len() - f.len()].trim_end());
    let colon = rest.ends_with([':', '：']);
    let rest = rest.trim_end_matches([':', '：']).trim_end();
    // A language that puts the verb last ends its sentence on it: "코드를 입력하세요.\nQX7K-2MPR".
    let verb_last = rest.trim_end_matches(['.', '。']);
    let tail: String = verb_last.chars().rev().take(6).collect();
    let asked = ENTER.iter().any(|w| {
        rest.ends_with(w) && word_starts(rest, rest.len() - w.len(), w)
            || (!w.is_ascii() && tail.contains(&w.chars().rev().collect::<String>()))
    });
    // What a colon presents after a clause asking to enter something: "geben Sie ein:",
    // "voer in:", "次のコードを入力してください：", "enter the code below:".
    asked || (colon && clause_asks_to_enter(rest))
}

/// Whether the last clause of `rest` (since its last full stop, at most 48 bytes back) holds a
/// word that asks to enter something ([`ENTER`]).
fn clause_asks_to_enter(rest: &str) -> bool {
    let clause = last_clause(rest, &['.', '!', '?', '。', '！', '？', '\n'], 48);
    ENTER.iter().any(|w| {
        clause.match_indices(w).any(|(i, _)| {
            let after = &clause[i + w.len()..];
            if !w.is_ascii() {
                return true;
            }
            // A whole word, followed only by words that ask for the code ("geben Sie ein",
            // "enter the code below"), not by what is typed ("Type your username:", "Input
            // voltage:").
            word_starts(clause, i, w)
                && !after.starts_with(|c: char| c.is_alphanumeric())
                && after.split_whitespace().all(|a| ASKING.contains(&a))
        })
    })
}

/// Words that may follow a word asking to enter something before a colon that presents the
/// code ("geben Sie ein:", "voer in:", "enter the code below:").
#[rustfmt::skip]
const ASKING: &[&str] = &[
    "the", "this", "that", "it", "in", "below", "following", "here", "now", "code", "pin", "key", "ein", "sie",
    "den", "diesen", "folgenden", "le", "la", "ce", "el", "este", "il", "questo", "o", "de", "het", "deze",
    "onderstaande", "volgende", "código", "codigo", "codice", "kod", "kode", "kodu", "ниже", "код",
];

/// The last clause of `text`: after the last of `ends`, at most `bytes` back (at a
/// character's boundary).
fn last_clause<'a>(text: &'a str, ends: &[char], bytes: usize) -> &'a str {
    let mut from = text.len().saturating_sub(bytes);
    while !text.is_char_boundary(from) {
        from += 1;
    }
    let tail = &text[from..];
    match tail.char_indices().rev().find(|(_, c)| ends.contains(c)) {
        Some((i, c)) => &tail[i + c.len_utf8()..],
        None => tail,
    }
}

/// Whether `after` (the lowercase text after a candidate) asks, in a language that puts the
/// verb last, for it to be entered: "KQ7-2TZ を画面に入力してください", "… 입력".
fn entered_right_after(after: &str) -> bool {
    let head: String = after.chars().take(10).collect();
    ENTER.iter().any(|w| !w.is_ascii() && head.contains(w))
        || after
            .split_whitespace()
            .take(2)
            .any(|w| ENTERED_AFTER.contains(&w.trim_matches(|c: char| !c.is_alphanumeric())))
}

/// Whether `before` ends with a colon or an equals sign: how a shop writes its code
/// ("Use code: 4821"), where a sign-in says "is".
fn colon_before(before: &str) -> bool {
    before.trim_end().ends_with([':', '：', '='])
}

/// Whether `after` (the lowercase text after a candidate) says the candidate is the code:
/// "482913 is your verification code", "KQXRT is your Steam Guard code".
fn named_right_after(after: &str) -> Option<bool> {
    let heads = [" is your ", " is the ", " is my ", " es tu ", " es su ", " est votre ", " ist ihr ", " ist dein "];
    let rest = heads.iter().find_map(|h| after.strip_prefix(h))?;
    let mut end = rest.len().min(48);
    while !rest.is_char_boundary(end) {
        end -= 1;
    }
    let words = &rest[..end];
    let says = !places(words, List::CodeWords).is_empty() || !places(words, List::Strong).is_empty();
    (says && !NOT_SECRET.iter().any(|n| words.contains(n))).then_some(true)
}

/// Whether `run` (a candidate's digits) is a year from 1900 to 2099, in any digits.
fn is_year(run: &str) -> bool {
    let mut year = 0;
    let mut count = 0;
    for c in run.chars() {
        let Some(d) = digit_value(c) else { return false };
        year = year * 10 + d;
        count += 1;
    }
    count == 4 && (1900..2100).contains(&year)
}

/// The zero of each set of decimal digits services write codes in: ASCII, full-width
/// (Japanese and Chinese texts), Arabic-Indic and Persian, the scripts of India, Thai, Lao,
/// Tibetan, Myanmar, Khmer, Mongolian, and the mathematical digits styled texts use.
#[rustfmt::skip]
const ZEROS: &[u32] = &[
    0x30, 0xFF10, 0x0660, 0x06F0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66, 0x0CE6,
    0x0D66, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x17E0, 0x1810, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC,
    0x1D7F6,
];

/// The value of a digit of [`is_digit`].
fn digit_value(c: char) -> Option<u32> {
    let c = u32::from(c);
    ZEROS.iter().find(|&&zero| (zero..zero + 10).contains(&c)).map(|zero| c - zero)
}

/// What the word just before a number says it is ([`PLACES`], [`LABELS`]), or the words
/// after it ([`STREETS`], [`MAYBE_STREETS`], [`UNITS`]).
#[derive(PartialEq, Eq)]
enum Label {
    None,
    /// A quantity, a time or a street number, whatever the words around it.
    Quantity,
    /// A room, a flight, a line: none unless the words call it the code.
    Place,
    /// An order, a page: none unless words that leave no doubt are near.
    Other,
}

fn labelled(lower: &str, at: &Range<usize>) -> Label {
    let mut from = at.start.saturating_sub(40);
    while !lower.is_char_boundary(from) {
        from -= 1;
    }
    let mut to = (at.end + 40).min(lower.len());
    while !lower.is_char_boundary(to) {
        to += 1;
    }
    let words = |s: &str| {
        s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_owned).collect::<Vec<_>>()
    };
    let before = words(&lower[from..at.start]).last().cloned().unwrap_or_default();
    let after = words(&lower[at.end..to]);
    let street = |list: &[&str]| after.iter().take(2).any(|w| list.contains(&w.as_str()));
    let unit = after.first().is_some_and(|w| UNITS.contains(&w.as_str()));
    if street(STREETS) || unit {
        Label::Quantity
    } else if PLACES.contains(&before.as_str()) {
        Label::Place
    } else if street(MAYBE_STREETS) || LABELS.contains(&before.as_str()) {
        Label::Other
    } else {
        Label::None
    }
}

/// Characters between the word at `at` and the span `c` (past `near`, any more).
fn distance(text: &str, at: usize, c: &Range<usize>, near: usize) -> usize {
    let (a, b) = if at < c.start { (at, c.start) } else { (c.end, at) };
    if b.saturating_sub(a) > 4 * near {
        return usize::MAX;
    }
    text.get(a..b).map_or(usize::MAX, |s| s.chars().count())
}

/// A run that may be a code.
struct Candidate {
    at: Range<usize>,
    shape: Shape,
}

/// What a candidate is made of, which says how sure the words around it must make it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Digits: a code near any word for code.
    Digits,
    /// Capitals and digits: a code near words that leave no doubt.
    Capitals,
    /// Letters alone, or small letters and digits: a code only right after a word for code.
    Word,
    /// 9 or 10 digits: a code only where the words say it is the code.
    Long,
}

/// Whether `word` (lowercase) is one of the words that say "code", or part of one.
fn says_code(word: &str) -> bool {
    CODE_PARTS.contains(word)
}

/// Each word of the words for code, one by one: a table computed from the constants above,
/// never written after.
static CODE_PARTS: std::sync::LazyLock<std::collections::HashSet<&'static str>> =
    std::sync::LazyLock::new(|| CODE_WORDS.iter().chain(STRONG).flat_map(|w| w.split(' ')).collect());

/// A decimal digit of any set of [`ZEROS`].
fn is_digit(c: char) -> bool {
    digit_value(c).is_some()
}

/// What may split a code in two groups: a space (no-break, thin and the other typeset
/// widths too, as French and typeset texts write "482 913"; zero-width ones as well), or a
/// hyphen.
fn splits_groups(c: char) -> bool {
    matches!(c, ' ' | '-' | '\u{00A0}' | '\u{202F}' | '\u{2002}'..='\u{200B}' | '\u{2060}' | '\u{3000}')
}

/// A character that takes no room: a soft hyphen, the zero-width ones, a word joiner.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{00AD}' | '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}')
}

/// A character of a run that may be a code.
fn is_code_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || is_digit(c)
}

/// Runs of 4 to 8 digits (one space or hyphen may split them in two groups of 3 or 4:
/// "123 456", "123-456"), runs of 4 to 10 capital letters and digits with both, and words of
/// 4 to 10 letters or small letters and digits, that are not parts of prices, dates, times,
/// phone numbers, amounts or longer numbers.
fn candidates(text: &str) -> Vec<Candidate> {
    // Invisible characters are passed over, so a code split by one ("739\u{AD}205") is read
    // whole, and hidden whole.
    let chars: Vec<(usize, char)> = text.char_indices().filter(|(_, c)| !is_invisible(*c)).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if !is_code_char(c) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && is_code_char(chars[j].1) {
            j += 1;
        }
        let word: String = chars[i..j].iter().map(|(_, c)| c).collect();
        let end = chars.get(j).map_or(text.len(), |(b, _)| *b);
        let before = i.checked_sub(1).map(|k| chars[k].1);
        let after = chars.get(j).map(|(_, c)| *c);
        let digit_at = |k: usize| chars.get(k).is_some_and(|(_, c)| is_digit(*c));
        // How many digits follow position k.
        let digits_from = |k: usize| chars[k.min(chars.len())..].iter().take_while(|(_, c)| is_digit(*c)).count();
        // Digits, a hyphen, then capitals and digits: "731-9KD", as some services write codes.
        let alnum = |k: usize| chars[k.min(chars.len())..].iter().take_while(|(_, c)| is_code_char(*c)).count();
        if word.chars().all(is_digit) && (3..=4).contains(&(j - i)) && after == Some('-') && digit_at(j + 1) {
            let n = alnum(j + 1);
            let tail = &chars[j + 1..j + 1 + n];
            let capitals = tail.iter().all(|(_, c)| c.is_ascii_uppercase() || c.is_ascii_digit());
            if (2..=4).contains(&n) && capitals && tail.iter().any(|(_, c)| c.is_ascii_uppercase()) {
                let end = chars.get(j + 1 + n).map_or(text.len(), |(b, _)| *b);
                out.push(Candidate { at: start..end, shape: Shape::Capitals });
                i = j + 1 + n;
                continue;
            }
        }
        if word.chars().all(is_digit) {
            // Groups after the same mark, one each time (a space, a hyphen, an invisible
            // one): "482 913", "48 17 63", "6093-71", "2 81 49 06", or a digit at a time
            // as a keypad or an app shows them ("4 8 2 9 1 3", "7-3-1-9").
            let mut groups = vec![j - i];
            let mut last = j;
            if let Some(mark) = after.filter(|c| splits_groups(*c) && digit_at(j + 1)) {
                while chars.get(last).is_some_and(|(_, c)| *c == mark) && digit_at(last + 1) {
                    let n = digits_from(last + 1);
                    groups.push(n);
                    last += 1 + n;
                }
            }
            // A run of 5 or more digits before a space is a number of its own, not a group
            // ("482913 5分钟内有效"): judged alone.
            if groups.len() >= 2 && groups[0] >= 5 && after.is_some_and(|c| c != '-') {
                groups.truncate(1);
                last = j;
            }
            let total: usize = groups.iter().sum();
            // A date ("12-05-2026", "2026 05 12") or a phone, a parcel's or a card's number
            // (more than 8 digits in all) is none.
            let date = matches!(groups.as_slice(), [2, 2, 4] | [4, 2, 2]);
            // Four pairs or more are a phone's number as Denmark or France write it ("70 10 00
            // 00", "01 23 45 67 89").
            let phone_pairs = groups.len() >= 4 && groups.iter().all(|&g| g == 2);
            // Three groups of three is how some services write a code of nine ("482-913-557").
            let grouped = groups.len() >= 2
                && ((4..=8).contains(&total) || groups == [3, 3, 3])
                && groups.iter().all(|g| (1..=4).contains(g))
                && (groups.iter().filter(|&&g| g == 1).count() <= 1 || groups.iter().all(|&g| g == 1))
                && !date
                && !phone_pairs;
            let last_of_chain = last;
            let (last, digits) = if groups.len() == 1 || grouped { (last, total) } else { (j, j - i) };
            let chained = groups.len() >= 2 && !grouped;
            let end = chars.get(last).map_or(text.len(), |(b, _)| *b);
            let next = chars.get(last).map(|(_, c)| *c);
            let joined = |c: Option<char>, k: Option<usize>| {
                matches!(c, Some('.' | ':' | '/' | '-' | '\u{2013}')) && k.is_some_and(&digit_at)
            };
            // A comma joins numbers as thousands or cents ("1,299", "1299,00"), not before
            // a clause ("482913,5分钟内有效").
            let comma_after = next == Some(',') && (2..=3).contains(&digits_from(last + 1));
            let part_of_more =
                joined(before, i.checked_sub(2)) || joined(next, Some(last + 1)) || comma_after || chained;
            // A card's or an account's last digits, the rest masked: "*3390", "...4417", "••8803".
            // Dots or an ellipsis mask only after a space or a mask: "cuenta ...4417", not
            // "code is...482913".
            let masked_from = |k: Option<usize>| {
                k.is_none_or(|k| chars[k].1.is_whitespace() || matches!(chars[k].1, '*' | '•' | ':' | '(' | '-'))
            };
            let dots = i.checked_sub(2).is_some_and(|k| chars[k].1 == '.')
                && before == Some('.')
                && masked_from(i.checked_sub(3).map(|k| {
                    let mut k = k;
                    while k > 0 && chars[k].1 == '.' {
                        k -= 1;
                    }
                    k
                }));
            // "*5067#" is what a keypad takes, not a card's last digits.
            let keyed_in = before == Some('*') && next == Some('#');
            let masked = (matches!(before, Some('*' | '•' | '·' | 'x' | 'X' | '〒')) && !keyed_in)
                || (before == Some('…') && masked_from(i.checked_sub(2)))
                || dots;
            let currency = |c: char| matches!(c, '$' | '€' | '£' | '¥' | '₹' | '₩');
            let money = before.is_some_and(currency)
                || next.is_some_and(|c| c == '%' || currency(c))
                || (before == Some(' ') && i.checked_sub(2).is_some_and(|k| currency(chars[k].1)));
            // "(415) 555-0199", "+1 415…": a phone's; "(482913)" alone is not.
            let phone = matches!(before, Some('+' | ')')) || (before == Some('(') && next != Some(')'));
            // "AMC-1234", "ISO-8601": a key of three letters or more before a hyphen names a
            // ticket or a standard; "G-123456" and "FB-48291" are how codes come.
            let keyed = before == Some('-')
                && chars[..i.saturating_sub(1)].iter().rev().take_while(|(_, c)| c.is_ascii_alphabetic()).count() >= 3;
            if (4..=10).contains(&digits) && !part_of_more && !money && !phone && !keyed && !masked {
                let shape = if digits <= 8 { Shape::Digits } else { Shape::Long };
                out.push(Candidate { at: start..end, shape });
            }
            // A chain of groups that is no code (a phone's, a parcel's) is passed over whole.
            i = if chained { last_of_chain } else { last };
            continue;
        }
        let letters = word.chars().filter(|c| c.is_ascii_alphabetic()).count();
        let digits = word.chars().count() - letters;
        let capitals = word.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
        let len = word.chars().count();
        // Two groups of three or four capitals and digits joined by a hyphen, as some
        // services write their codes ("A7K-29Q").
        let group = |k: usize| {
            let n = chars[k.min(chars.len())..]
                .iter()
                .take_while(|(_, c)| c.is_ascii_uppercase() || c.is_ascii_digit())
                .count();
            ((2..=4).contains(&n) && !chars.get(k + n).is_some_and(|(_, c)| is_code_char(*c))).then_some(n)
        };
        if capitals
            && (3..=4).contains(&len)
            && after == Some('-')
            && let Some(n) = group(j + 1)
        {
            // A key of letters before the hyphen names a ticket or a standard ("AMC-1234").
            let second = &chars[j + 1..j + 1 + n];
            // Digits and capitals in the two groups together, but not a key of letters and a
            // number ("AMC-1234", "ISO-8601").
            let key = !word.chars().any(|c| c.is_ascii_digit()) && second.iter().all(|(_, c)| c.is_ascii_digit());
            let has_digit =
                (word.chars().any(|c| c.is_ascii_digit()) || second.iter().any(|(_, c)| c.is_ascii_digit())) && !key;
            // A third group ("KC7R-29XQ-M4T") makes it a voucher's or a product's key.
            let third = chars.get(j + 1 + n).is_some_and(|(_, c)| *c == '-') && group(j + 2 + n).is_some();
            if has_digit && !third && (letters > 0 || second.iter().any(|(_, c)| c.is_ascii_alphabetic())) {
                let end = chars.get(j + 1 + n).map_or(text.len(), |(b, _)| *b);
                out.push(Candidate { at: start..end, shape: Shape::Capitals });
                i = j + 1 + n;
                continue;
            }
        }
        // Two groups of letters alone ("CEZP-QYCE", "wxgu-qpic"), as devices are paired: a
        // code only where the words call it one or ask to enter it.
        let letters_only = |w: &[(usize, char)]| {
            w.iter().all(|(_, c)| c.is_ascii_uppercase()) || w.iter().all(|(_, c)| c.is_ascii_lowercase())
        };
        if (3..=4).contains(&len) && letters == len && after == Some('-') && letters_only(&chars[i..j]) {
            let n = chars[(j + 1).min(chars.len())..].iter().take_while(|(_, c)| c.is_ascii_alphabetic()).count();
            let second = &chars[(j + 1).min(chars.len())..(j + 1 + n).min(chars.len())];
            let same_case = letters_only(second)
                && second.first().is_some_and(|(_, a)| a.is_ascii_uppercase() == chars[i].1.is_ascii_uppercase());
            let more = chars.get(j + 1 + n).is_some_and(|(_, c)| is_code_char(*c) || *c == '-');
            if (3..=4).contains(&n) && same_case && !more {
                let end = chars.get(j + 1 + n).map_or(text.len(), |(b, _)| *b);
                out.push(Candidate { at: start..end, shape: Shape::Word });
                i = j + 1 + n;
                continue;
            }
        }
        if (4..=10).contains(&len) && letters > 0 && digits > 0 && capitals {
            out.push(Candidate { at: start..end, shape: Shape::Capitals });
        } else if let Some(p) = word.find(is_digit).filter(|_| letters <= 2 && digits >= 4) {
            // "G-123456" is split at the hyphen; "G123456" keeps its letter: the digits are the code.
            // `p` counts in the word, whose invisible characters are left out: the text's
            // place of that digit is its character's.
            let digits_at = chars[i + word[..p].chars().count()].0;
            if word[p..].chars().all(is_digit) && (4..=8).contains(&word[p..].chars().count()) {
                out.push(Candidate { at: digits_at..end, shape: Shape::Digits });
            }
        } else if (4..=10).contains(&len)
            && word.chars().all(|c| c.is_ascii_alphanumeric())
            && (if digits == 0 { capitals && len >= 5 } else { letters > 0 })
            && !says_code(&word.to_ascii_lowercase())
        {
            // "KQXRT", "a7k9q2": a code only right after a word for code.
            out.push(Candidate { at: start..end, shape: Shape::Word });
        }
        i = j;
    }
    out
}

/// Codes of Apple's origin-bound form, a line's `@domain #code` (WebKit's "Origin-bound
/// one-time codes delivered via SMS"): the spans of the codes.
fn apple_codes(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let words: Vec<(usize, &str)> = line
            .split(' ')
            .scan(0, |pos, w| {
                let at = *pos;
                *pos += w.len() + 1;
                Some((at, w))
            })
            .collect();
        for pair in words.windows(2) {
            let ((_, domain), (at, code)) = (pair[0], pair[1]);
            let code = code.trim_end();
            if domain.len() > 3
                && domain.starts_with('@')
                && domain.contains('.')
                && code.len() > 4
                && let Some(c) = code.strip_prefix('#').filter(|c| c.chars().all(|c| c.is_ascii_alphanumeric()))
            {
                let start = offset + at + 1;
                out.push(start..start + c.len());
            }
        }
        offset += line.len();
    }
    out
}

/// Words in a link's address that say it signs someone in or resets something.
#[rustfmt::skip]
const LINK_WORDS: &[&str] = &[
    "reset", "password", "passwd", "magic", "login", "log-in", "signin", "sign-in", "sign_in",
    "verify", "verification", "confirm", "auth", "otp", "token", "activate", "one-time", "onetime",
    "recover", "forgot", "recuperar", "recupera", "validation", "validar", "valider", "verifica",
    "verifique", "bestaetigen", "anmelden", "connexion", "accesso",
];

/// Query parameters whose value signs someone in, however short ("?otp=4829").
#[rustfmt::skip]
const CODE_KEYS: &[&str] = &[
    "code", "otp", "pin", "passcode", "token", "key", "auth", "secret", "sig", "signature", "hash",
    "nonce", "ticket", "t",
];

/// Words around a link that say it signs someone in or resets a password, whatever its
/// address says ("Reset your password here: https://bit.ly/…"): within [`NEAR_STRONG`]
/// of it, a link carrying anything like a token is one.
#[rustfmt::skip]
const LINK_CONTEXT: &[&str] = &[
    "password", "reset your", "reset link", "sign-in link", "sign in link", "signin link",
    "login link", "log-in link", "log in link", "magic link", "one-time link", "verify your",
    "verification link", "confirm your email", "confirm your account", "activate your account",
    "tap to sign in", "click to sign in", "tap to log in", "click to log in", "to sign in, tap",
    "to sign in, click", "sign in with this link", "log in with this link", "do not share",
    "don't share", "never share", "one-time", "otp", "2fa", "sign in", "signing in", "log in",
    "login", "approve the new", "approval link", "verify your", "reset it",
    // German, Spanish, French, Portuguese, Italian
    "anmelden", "passwort", "zurücksetzen", "contraseña", "restablece", "iniciar sesión",
    "mot de passe", "réinitialis", "connectez", "connexion", "senha", "redefinir",
    "entrar na sua conta", "accedi", "reimposta", "anzumelden", "log back", "sign back",
    "connecter", "recuperar", "validez", "valide", "verifica", "conferma", "anmeldelink",
    "nur einmal", "wachtwoord", "inloggen", "пароль", "войти", "hasło", "haslo", "şifre",
    "approve", "confirm your", "to verify", "verify this", "verify it", "one-time link", "sign-in link", "restablecer", "réinitialiser",
    "confirmez", "zurück", "reimpostare", "entre na sua conta", "身份验证", "сброс", "yenilemek",
    "xác minh", "đăng nhập", "atur ulang", "kata sandi", "إعادة تعيين", "كلمة المرور", "रीसेट",
    "पासवर्ड", "本人確認", "로그인 링크", "accedi",
    "パスワード", "再設定", "ログイン", "密码", "密碼", "重置", "重設", "登录", "登入", "验证", "驗證",
    "비밀번호", "재설정", "로그인", "인증", "sıfırla", "şifreni", "şifrenizi", "mật khẩu", "đặt lại",
    "confirm it's you", "confirm it’s you", "verify it's you", "восстановлен", "відновлен", "giriş yap",
    "set a new pin", "secure link", "e-mail-adresse", "підтвердіть", "logga in", "nulstil", "adgangskode",
    "přihlaste", "dat lai mat khau", "đặt lại mật khẩu", "intra in cont", "بازیابی", "رمز عبور",
    "obnova hesla", "obnovení hesla", "heslo", "รีเซ็ต", "รหัสผ่าน", "איפוס", "סיסמה",
    "resetează", "reseteaza", "resetare", "parola", "επαναφορά", "κωδικού πρόσβασης", "in te loggen",
    "zaloguj", "سجّل الدخول", "سجل الدخول", "تسجيل الدخول", "masuk", "log ind", "palauta", "salasana", "vahvista",
    "tilbakestill", "passord", "logging in", "account recovery", "recupere", "pemulihan", "recovery",
    // confirming an address or signing in, said in more languages
    "recover your", "bevestig je", "bevestig uw", "войдите", "тут войти", "تأكيد بريدك", "تأكيد البريد", "साइन इन",
    "लॉग इन", "bekreft e-post", "bekräfta din e-post", "bekræft din e-mail", "להתחבר", "להתחברות",
    "ยืนยันอีเมล", "salasanasi", "vahvista sähköposti", "potvrďte e-mail", "potvrdit e-mail",
    "xác nhận email", "verifikasi email", "konfirmasi email", "επιβεβαιώστε το email",
];

/// Hosts whose links name a document, a place, a post or a video, never who signs in:
/// their long identifiers ("docs.google.com/document/d/1AbC…") are no tokens, whatever the
/// words around them ("Sign in to see the doc").
#[rustfmt::skip]
const DOCUMENT_HOSTS: &[&str] = &[
    "docs.google.com", "drive.google.com", "photos.app.goo.gl", "maps.app.goo.gl",
    "maps.google.com", "www.dropbox.com", "dropbox.com", "www.figma.com", "figma.com",
    "github.com", "gist.github.com", "gitlab.com", "www.youtube.com", "youtube.com", "youtu.be",
    "open.spotify.com", "x.com", "twitter.com", "www.instagram.com", "instagram.com",
    "en.wikipedia.org", "www.reddit.com", "reddit.com", "stackoverflow.com",
];

/// Query parameters that say where a link was shared from, never who signs in.
#[rustfmt::skip]
const TRACKING: &[&str] = &[
    "smid", "fbclid", "gclid", "dclid", "msclkid", "mc_cid", "mc_eid", "igshid", "si", "ref",
    "ref_src", "source", "share", "src", "campaign", "cmpid",
];

/// Where each web or app address is in `text` (`lower`, its lowercase): with any scheme
/// (a web link, or an app's own, "myapp://login?token=…"), or a web address without one, as
/// texts often write it ("www.example.com/reset?token=…"). An address inside another
/// (`…/login?next=myapp://…`) is part of the first.
fn addresses(text: &str, lower: &str) -> Vec<Range<usize>> {
    let with_scheme = lower.match_indices("://").filter_map(|(sep, _)| {
        let scheme =
            lower[..sep].chars().rev().take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'));
        let at = sep - scheme.count();
        (sep - at >= 2).then_some(at)
    });
    let bare = lower.match_indices("www.").map(|(at, _)| at).filter(|&at| {
        !lower[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || matches!(c, '/' | '.' | '-'))
    });
    // A web address without a scheme or "www." as texts write it ("acme.co/r/AbC123"): a
    // host of two labels or more, the last of letters, then a path.
    let words = lower.split_ascii_whitespace().map(|w| w.as_ptr() as usize - lower.as_ptr() as usize);
    let hosted = words.filter(|&at| {
        let word = lower[at..].split_ascii_whitespace().next().unwrap_or_default();
        let word = word.trim_start_matches(['(', '<', '[', '"', '\'']);
        let Some((host, _)) = word.split_once('/') else { return false };
        let labels: Vec<&str> = host.split('.').collect();
        labels.len() >= 2
            && labels.iter().all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
            && labels
                .last()
                .is_some_and(|tld| (2..=6).contains(&tld.len()) && tld.bytes().all(|b| b.is_ascii_alphabetic()))
            && !word.contains("://")
    });
    let hosted =
        hosted.map(|at| at + lower[at..].len() - lower[at..].trim_start_matches(['(', '<', '[', '"', '\'']).len());
    let mut starts: Vec<usize> = with_scheme.chain(bare).chain(hosted).collect();
    starts.sort_unstable();
    let mut out: Vec<Range<usize>> = Vec::new();
    for at in starts {
        if out.last().is_some_and(|last| at < last.end) {
            continue;
        }
        let end = text[at..].find(char::is_whitespace).map_or(text.len(), |e| at + e);
        let end = at + text[at..end].trim_end_matches(['.', ',', ')', '!', '?', '"', '\'', '>', ']']).len();
        out.push(at..end);
    }
    out
}

/// The addresses among `addresses` that are sign-in or reset links: their address speaks
/// of signing in or resetting and carries a token (a query value of 8 characters or more,
/// or any under a key such as `code` or `otp`; a path part of 16 or more with letters and
/// digits; a code of 4 to 8 digits as the part after a sign-in word, the host included for
/// an app's own scheme, "myapp://verify/482975"), or the words around it do
/// ([`LINK_CONTEXT`]) and it carries anything like one (a part of 8 or more with letters and
/// digits, a query value of 6 or more).
fn links(text: &str, lower: &str, addresses: &[Range<usize>], learned: &dyn Fn(&Range<usize>) -> bool) -> Vec<Found> {
    let context = places(lower, List::LinkContext);
    let mut out = Vec::new();
    for at in addresses {
        let url = &lower[at.clone()];
        let speaks = speaks_of_signing_in(url);
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        // A tracking parameter carries no sign-in, whatever its length.
        let tracking = |k: &str| k.starts_with("utm_") || TRACKING.contains(&k);
        let values: Vec<(&str, &str)> =
            query.split('&').filter_map(|kv| kv.split_once('=')).filter(|(k, _)| !tracking(k)).collect();
        // A token, a short value under a key for one, or a code of 4 to 8 digits in a link that
        // signs in ("/recover/code/?u=…&n=771204").
        let query_token = values.iter().any(|(k, v)| {
            tokenish(v, 8)
                || (CODE_KEYS.contains(k) && v.len() >= 4)
                || (speaks && (4..=8).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_digit()))
        });
        // The host and the parts after it, with or without a scheme.
        let path = path.split_once("://").map_or(path, |(_, rest)| rest);
        let parts: Vec<&str> = path.split(['/', '#']).collect();
        // A commit's hash names a change, not a sign-in.
        let named = |i: usize| i > 0 && matches!(parts[i - 1], "commit" | "commits" | "blob" | "tree");
        let path_token = (1..parts.len()).any(|i| !named(i) && tokenish(parts[i], 16));
        // A code as the part after a sign-in word: "t.me/login/71245".
        let path_code = parts.windows(2).any(|w| {
            speaks_of_signing_in(w[0]) && (4..=8).contains(&w[1].len()) && w[1].chars().all(|c| c.is_ascii_digit())
        });
        let host = path.split('/').next().unwrap_or_default();
        let said_around = close(text, &context, at, NEAR_STRONG) && !DOCUMENT_HOSTS.contains(&host);
        // A shortened link's key: the one part after a short host, letters and digits or
        // mixed case ("bit.ly/dd3Txhj", "g.co/verify/dWL33Ty7p", "nu.bank/r/yWw6GtgUm").
        let short = host.len() <= 12
            && parts.len() <= 3
            && parts.last().is_some_and(|_| {
                let key = &text[at.clone()].rsplit('/').next().unwrap_or_default();
                (4..=16).contains(&key.len())
                    && key.bytes().all(|b| b.is_ascii_alphanumeric())
                    && (key.bytes().any(|b| b.is_ascii_digit()) || key.bytes().any(|b| b.is_ascii_uppercase()))
                    && key.bytes().any(|b| b.is_ascii_alphabetic())
            });
        // A key as the last part of a path under words that leave no doubt ("Restablece tu
        // contraseña aquí: https://cuenta.example.es/r/Xk29QpL"): letters and digits changing
        // places twice or more, in both cases or three times (not "HT204053", "Gamer2024").
        let keyed = parts.len() >= 2 && {
            let key = text[at.clone()].rsplit('/').next().unwrap_or_default();
            (5..=24).contains(&key.len())
                && key.bytes().all(|b| b.is_ascii_alphanumeric())
                && key.as_bytes().windows(2).filter(|w| w[0].is_ascii_digit() != w[1].is_ascii_digit()).count() >= 2
                && (key.bytes().any(|b| b.is_ascii_uppercase()) || tokenish(&key.to_ascii_lowercase(), 5))
        };
        let loose = (1..parts.len()).any(|i| !named(i) && tokenish(parts[i], 6))
            || values.iter().any(|(_, v)| tokenish(v, 6))
            || short
            || keyed;
        let rule = if speaks && (query_token || path_token || path_code) {
            Rule::LinkAddress
        } else if said_around && (query_token || path_token || loose) {
            Rule::LinkWords
        } else if (query_token || path_token || loose) && !DOCUMENT_HOSTS.contains(&host) && learned(at) {
            // What the rules leave of a link that carries a token, the learned model may take.
            Rule::Learned
        } else {
            continue;
        };
        out.push(Found { kind: SecretKind::Link, at: at.clone(), rule });
    }
    out
}

/// Whether `url` (lowercase) names signing in or resetting as one of its words ("login",
/// "sign-in") or at the start of one ("resetpassword", "verifyemail"), never inside another
/// word ("author", "hotpot").
fn speaks_of_signing_in(url: &str) -> bool {
    let words: Vec<&str> = url.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    LINK_WORDS.iter().any(|link| {
        let pieces: Vec<&str> = link.split(|c: char| !c.is_ascii_alphanumeric()).collect();
        match pieces.as_slice() {
            [one] if one.len() >= 5 => words.iter().any(|w| w.starts_with(one)),
            [one] => words.contains(one),
            many => words.windows(many.len()).any(|w| w == many),
        }
    })
}

/// Letters and digits mixed, `len` or more characters: what a token looks like.
fn mixed(part: &str, len: usize) -> bool {
    part.len() >= len && part.chars().any(|c| c.is_ascii_digit()) && part.chars().any(|c| c.is_ascii_alphabetic())
}

/// Whether a query value or a path part of `len` or more characters reads as a token: letters
/// and digits mixed through it (a hash, a random key), not a page's name of words and a
/// number ("how-to-verify-jwt-token-in-node-18", "SFUSD2024", "article-9847213"), nor a
/// hexadecimal address ("0x…").
fn tokenish(part: &str, len: usize) -> bool {
    if !mixed(part, len) || part.starts_with("0x") {
        return false;
    }
    let pieces: Vec<&str> = part.split(['-', '_', '.']).filter(|p| !p.is_empty()).collect();
    // A slug: words, and numbers too short to be keys.
    let slug = pieces.len() >= 2
        && pieces.iter().any(|p| p.len() >= 4 && p.chars().all(|c| c.is_ascii_alphabetic()))
        && pieces.iter().all(|p| {
            p.chars().all(|c| c.is_ascii_alphabetic()) || (p.chars().all(|c| c.is_ascii_digit()) && p.len() < 8)
        });
    // Long, or short with letters and digits changing places three times or more ("9f8e7d",
    // not "SFUSD2024").
    let flips = part.as_bytes().windows(2).filter(|w| w[0].is_ascii_digit() != w[1].is_ascii_digit()).count();
    !slug && (part.len() >= 16 || flips >= 3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the finder hides of `text`, each part as it stands in it.
    fn parts(text: &str) -> Vec<String> {
        find(text, false).iter().map(|f| text[f.at.clone()].to_owned()).collect()
    }

    fn hidden(text: &str) -> String {
        hide(text, &find(text, false))
    }

    #[test]
    fn a_code_is_hidden_and_the_words_around_it_stay() {
        assert_eq!(
            hidden("Your verification code is 482913. Don't share it."),
            format!("Your verification code is {CODE_MARKER}. Don't share it.")
        );
        assert_eq!(
            hidden("G-381204 is your Google verification code."),
            format!("G-{CODE_MARKER} is your Google verification code.")
        );
        assert_eq!(hidden("Your code: 123-456"), format!("Your code: {CODE_MARKER}"));
        let apple = "Your Example code is 552266.\n\n@example.com #552266";
        assert!(!hidden(apple).contains("552266"), "{}", hidden(apple));
    }

    #[test]
    fn numbers_that_are_no_codes_stay() {
        for text in [
            "Dinner was $1234 for the whole table, code name: birthday",
            "My zip code is 94110",
            "Use promo code SAVE2024 for 20% off",
            "Call me at +1 415 555 0199",
            "The meeting moved to 12/04/2026 at 14:30",
            "Flight 4521 lands at 9",
        ] {
            assert_eq!(hidden(text), text);
        }
    }

    #[test]
    fn letters_whose_lowercase_is_longer_or_shorter_move_nothing() {
        // 'İ' lowercases to two characters and the Kelvin sign to a shorter 'k': positions
        // found in the lowercase copy must still be the text's.
        for text in ["\u{212A} code 482913 İİ", "\u{212A}验证码482913İİ", "İİİ Your verification code is 482913"]
        {
            let shown = hidden(text);
            assert!(!shown.contains("482913") && shown.contains(CODE_MARKER), "{text} -> {shown}");
        }
    }

    #[test]
    fn a_number_is_a_code_within_its_words_reach_and_no_further() {
        // "code" reaches 60 characters, words that leave no doubt 120. Counted in
        // characters whatever their bytes: 'é' takes two, '🙂' four.
        for (word, near) in [("code", NEAR), ("verification", NEAR_STRONG)] {
            for filler in ['x', 'é', '🙂'] {
                for (gap, is_code) in [(near - 1, true), (near, true), (near + 1, false), (3 * near, false)] {
                    let pad = |n: usize| -> String { std::iter::repeat_n(filler, n).collect() };
                    // The word before the code, its start `gap` characters before the code's.
                    let before = format!("{word} {} 482913", pad(gap - word.len() - 2));
                    // The code before the word, its end `gap` characters before the word.
                    let after = format!("482913 {} {word}", pad(gap - 2));
                    for text in [before, after] {
                        assert_eq!(!hidden(&text).contains("482913"), is_code, "{gap} {filler:?}: {text}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_link_inside_another_is_one_secret() {
        let text = "Sign in: https://a.example/login?next=myapp://x/reset?token=abcdefgh12 now";
        let found = find(text, false);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(hidden(text), format!("Sign in: {LINK_MARKER} now"));
        assert!(found_unhidden(text, false, &["now".to_owned()]));
        assert!(!found_unhidden(text, false, &["abcdefgh12".to_owned()]));
    }

    #[test]
    fn what_follows_a_word_for_code_is_the_code_when_the_words_say_so() {
        for (text, code) in [
            ("Your PIN is 1987", "1987"),
            ("Steam Guard code is: KQXRT", "KQXRT"),
            ("Your verification code is a7k9q2", "a7k9q2"),
            ("backup codes 48291,55123", "55123"),
            ("認証コードは：４８２９１３", "４８２９１３"),
        ] {
            assert!(!hidden(text).contains(code), "{text} -> {}", hidden(text));
        }
        for text in
            ["CHECK THE CODE AGAIN", "error: code E404", "code ipv6 works", "Advent of Code 2024", "code ٢٠٢٤ lol"]
        {
            assert_eq!(hidden(text), text);
        }
    }

    /// A message from someone else.
    fn from<'a>(source: &'a str, sender: &'a str) -> Author<'a> {
        Author { source, sender, is_self: false }
    }

    #[test]
    fn classification_is_the_kinds_found_and_short_code_channels_are_one_to_one() {
        assert_eq!(classify(from("imessage", "+15551234567"), "lunch at 12:30?"), 0);
        assert_eq!(
            classify(from("imessage", "+15551234567"), "Your verification code is 482913"),
            SecretKind::Code.bit()
        );
        let both = "Code 482913, or https://example.com/reset?token=9f8e7d6c5b4a";
        assert_eq!(SecretKind::in_mask(classify(from("discord", "1234"), both)), [SecretKind::Code, SecretKind::Link]);
        // A short code's numbers are codes on iMessage, where short codes text from, when
        // its message asks for a code or is hardly more than the number.
        assert_eq!(classify(from("imessage", "72975"), "Enter 918273"), 1);
        assert_eq!(classify(from("imessage", "72975"), "Table 918273 at noon"), 0);
        // The person's own messages are stored as from `me`, which is not a sender id.
        assert_eq!(classify(Author { source: "imessage", sender: "me", is_self: true }, "The rent is 482913"), 0);
        assert_eq!(classify(from("discord", "72975"), "Table 918273 at noon"), 0);
        assert!(is_short_code_channel("imessage", "any;-;72975") && is_short_code_channel("imessage", "any;-;GOOGLE"));
        for (source, id) in [
            ("imessage", "any;+;chat72975"),
            ("imessage", "any;-;+15551234567"),
            ("discord", "72975"),
            ("imessage", "72975"),
        ] {
            assert!(!is_short_code_channel(source, id), "{source} {id}");
        }
    }

    #[test]
    fn apples_form_and_the_words_of_a_code_win_over_labels() {
        for text in [
            "Your code is 482913.\n\n@vipps.no #482913",
            "Your OTP number: 482913",
            "Salesforce verification code: 482913",
            "Your Salesforce code is 482913",
            // Words that may also name a page or a street yield to the words of a code.
            "Enter this verification code on the sign-in page: 482913",
            "Your verification code is 482913 via WhatsApp",
        ] {
            assert!(!hidden(text).contains("482913"), "{text} -> {}", hidden(text));
        }
    }

    #[test]
    fn a_search_finds_a_message_by_its_other_words_only() {
        let text = "验证码482913，请勿泄露。Code for Ädå: 55-1234";
        let terms = |q: &str| -> Vec<String> {
            q.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(fold).collect()
        };
        for found in ["验证码", "请勿", "ada", "code"] {
            assert!(found_unhidden(text, false, &terms(found)), "{found}");
        }
        for hidden in ["482913", "码4", "码48", "4829", "482-913"] {
            assert!(!found_unhidden(text, false, &terms(hidden)), "{hidden}");
        }
    }

    #[test]
    fn a_code_is_hidden_wherever_it_stands_again() {
        let text = "Your Acme verification code is 482 971. Or tap https://acme.com/v/482971 (ref a14829712b)";
        let shown = hidden(text);
        assert!(!shown.contains("482971") && !shown.contains("971"), "{shown}");
        // Nor can a search confirm a guess through the word that held it.
        let text = "Your verification code is 4829. ticket a14829b";
        assert!(!found_unhidden(text, false, &["is".to_owned(), "4829".to_owned()]));
        assert!(found_unhidden(text, false, &["ticket".to_owned()]));
    }

    #[test]
    fn a_code_repeated_in_other_case_or_with_other_spaces_is_hidden_too() {
        for (text, gone) in [
            ("Your Steam Guard code is: KQXRT. Or open https://store.example/g/kqxrt", "kqxrt"),
            ("Your verification code is 482-971; also 482 971 and 482971", "971"),
        ] {
            let shown = hidden(text);
            assert!(!shown.to_lowercase().contains(gone), "{text} -> {shown}");
        }
        // A shop's code stays, with a colon as with a space.
        for text in ["Use code: 4821 at checkout for 20% off", "Use code 1234 at checkout for 10% off"] {
            assert_eq!(hidden(text), text);
        }
    }

    #[test]
    fn a_number_given_alone_is_a_code_and_a_time_a_zip_or_a_sentence_is_not() {
        for text in [
            "482980",
            " it's 482981! ",
            "ok it's 731842",
            "731843 👍",
            "here you go: 731844",
            "731847 hurry it expires",
            "c'est 731851",
            "the code is 551 005",
        ] {
            assert_eq!(classify(from("imessage", "+15551234567"), text), 1, "{text}");
        }
        for text in [
            "2024",
            "94110",
            "it's 1430",
            "ok 1430 works",
            "482980 people",
            "room 220401",
            "",
            "   ",
            "it's",
            "its2024",
            "we raised 150000 and 20000 more",
        ] {
            assert_eq!(classify(from("imessage", "+15551234567"), text), 0, "{text}");
        }
    }

    #[test]
    fn nine_or_ten_digits_are_a_code_only_where_the_words_say_so() {
        assert!(!hidden("Your verification code is 4829690127").contains("4829690127"));
        for text in ["Call 4155550199 to verify your order", "verification ticket 482969012"] {
            assert_eq!(hidden(text), text);
        }
    }

    #[test]
    fn every_code_of_a_long_message_full_of_them_is_hidden() {
        // Its cost is the bench's (`cargo bench -p amc-secrets --bench secrets`).
        let text = "code 1234 ".repeat(4_000);
        assert_eq!(find(&text, false).len(), 4_000);
        assert!(!hidden(&text).contains("1234"));
    }

    #[test]
    fn a_password_after_its_word_is_hidden_whole() {
        for (text, password) in [
            ("Wi-Fi: MarriottGuest, password: Blue$ky2291 - enjoy your stay.", "Blue$ky2291"),
            ("Your temporary password is pL9@x3Vn\nIt expires in 24 hrs.", "pL9@x3Vn"),
            ("Bonjour, votre mot de passe initial pour l'intranet : Bx@47mQw-2 (merci)", "Bx@47mQw-2"),
            ("Ihr Initialpasswort für das Firmenkonto: Hz7!rQ2x-L (bitte ändern)", "Hz7!rQ2x-L"),
            ("Wi-Fiのパスワードは Sakura@2291x です", "Sakura@2291x"),
            // Glued to their word, or to a particle after it.
            ("WiFi密码是abc12345", "abc12345"),
            ("パスワードはSakura2291です", "Sakura2291"),
            ("key:abc12345", "abc12345"),
            ("pass:Blue$ky2291", "Blue$ky2291"),
            ("ПАРОЛЬ: qwe$rty!7", "qwe$rty!7"),
        ] {
            let found = find(text, false);
            assert_eq!(found.iter().map(|f| &text[f.at.clone()]).collect::<Vec<_>>(), [password], "{text}");
            assert_eq!(found[0].rule, Rule::Password);
        }
        for text in [
            "we hash passwords with argon2id, m=65536 t=3 p=4",
            "Your password was changed. Write to it@example.com if it was not you.",
            "IT: your password reset request has been closed.",
        ] {
            assert_eq!(hidden(text), text);
        }
    }

    #[test]
    fn a_code_in_groups_or_split_by_an_invisible_character_is_hidden_whole() {
        for text in [
            "Chase: Your one-time code is 48 17 63. Don't share it.",
            "Barclays: 6093-71 is your one-time passcode.",
            "Volksbank: Ihre SecureGo-TAN 2 81 49 06 für den Auftrag",
            "Your verification code is 739\u{AD}205. Don't share it.",
            "Your login code: 58\u{200B}41\u{200B}06",
        ] {
            let shown = hidden(text);
            assert!(!shown.chars().any(|c| c.is_ascii_digit()) && shown.contains(CODE_MARKER), "{text} -> {shown}");
        }
        // Dates and numbers longer than a code stay, however they are grouped.
        for text in ["Your code for the 12-05-2026 visit", "Verify: member 9283 7461 0025"] {
            assert_eq!(hidden(text), text);
        }
    }

    #[test]
    fn a_code_stays_a_code_when_a_reference_only_passes_by() {
        // The reference word is not what the number is: the word for code is the subject.
        for text in [
            "Your verification code for your account is 482913",
            "Your OTP for your transaction is 482913. Do not share.",
            "Your temporary PIN for your new card is 4829",
            "验证码：482913 5分钟内有效",
            "Your code is...482913",
        ] {
            let shown = hide(text, &find(text, true));
            assert!(!shown.contains("4829"), "{text} -> {shown}");
        }
        // A letter split from a code by an invisible character moves nothing.
        let text = "ok a\u{AD}b482913";
        assert!(find(text, true).iter().all(|f| f.rule != Rule::Unread && text.is_char_boundary(f.at.start)));
    }

    #[test]
    fn a_reference_is_named_by_its_words_whatever_else_the_message_says() {
        // From a short code, with words for code in the message: the reference stays.
        for text in [
            "BofA: Direct deposit of $2,814.55 posted to account ending in 0382. Never share your code.",
            "Chase: card ending in 4471 used at WHOLEFDS. Don't share your PIN.",
            "Renfe: Localizador de tu billete: XQ4P7M. Código de verificación enviado aparte.",
            "Capital One: Purchase on Visa ...8830 approved. Never share a code.",
            "Domino's: $7.99 with promo code 9193. Order at dominos.com.",
        ] {
            assert_eq!(hide(text, &find(text, true)), text);
        }
        // A short code's number with nothing asking for a code is none; its code is one.
        assert_eq!(
            hide("DHL: Shipment 48213 arrives Thursday.", &find("DHL: Shipment 48213 arrives Thursday.", true)),
            "DHL: Shipment 48213 arrives Thursday."
        );
        assert_eq!(hide("Code: 60 18 42", &find("Code: 60 18 42", true)), format!("Code: {CODE_MARKER}"));
    }

    #[test]
    fn what_asks_to_enter_a_code_or_names_its_door_is_read_within_its_clause() {
        let hidden = parts;
        // A full stop of three bytes before the clause; a label after an asking word.
        assert!(hidden("次の画面で入力してください。お問い合わせ番号：AB12CD34").is_empty());
        assert!(hidden("Type your username: JSMITH88").is_empty());
        assert!(hidden("Input voltage: 220V").is_empty());
        // The rules leave a plan's name after an asking word (what the learned model makes of
        // it is measured on the sets, not held here).
        let plan = "Enterprise tier: PRO2024 (type 'upgrade' to switch)";
        assert!(find_with(plan, false, &learned::Model::empty()).is_empty());
        assert!(hidden("The zip code for the garage is 94110").is_empty());
        assert!(hidden("The promo code for the portal is SAVE20").is_empty());
        assert!(hidden("Login help: https://support.apple.com/kb/HT204053").is_empty());
        assert!(hidden("Introduce el código. Código para llamar a soporte: 612 345 678").is_empty());
        assert_eq!(hidden("Ga naar example.nl/koppel en voer in:\nMX7R-K2QP"), ["MX7R-K2QP"]);
        assert_eq!(hidden("The code of the front door is 4821, then the lift."), ["4821"]);
        // However long the text, each look stays within its clause.
        let long = "code a: 1234 ".repeat(3_000);
        let started = std::time::Instant::now();
        let _ = find(&long, false);
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[test]
    fn keypads_number_matching_and_keys_on_their_own_line_are_found_and_their_lookalikes_are_not() {
        let hidden = parts;
        // A digit at a time, a keypad's star and hash, a door's word alone.
        assert_eq!(hidden("Alarm code is 5-5-8-0, 30 sec after the door opens"), ["5-5-8-0"]);
        assert_eq!(hidden("Pairing: type the number shown below\n\n4 8 2 9 1 3"), ["4 8 2 9 1 3"]);
        assert_eq!(hidden("Gate keypad: *5067# then push hard"), ["5067"]);
        assert_eq!(hidden("garage keypad is 0412 now"), ["0412"]);
        assert!(hidden("Your card *5067 was charged").is_empty());
        assert!(hidden("Score was 3 1 4 5 in the end").is_empty());
        // Number matching: two digits a sign-in asks to pick, and only that.
        assert_eq!(hidden("Sign-in request from Edge. To approve, type 37 in the Authenticator app."), ["37"]);
        assert_eq!(hidden("[토스] 로그인하려면 앱에서 숫자 64를 선택하세요."), ["64"]);
        assert!(hidden("Type 2 diabetes talk at 10, log in to the portal to join").is_empty());
        assert!(hidden("Select 12 items, then log in to pay 12.50").is_empty());
        // A key presented on its own line; a network's password on the line after its name.
        let steam =
            "Steam Guard\n\nSomeone is trying to log in. If this was you, use the following to continue:\n\nF7XQ2";
        assert_eq!(hidden(steam), ["F7XQ2"]);
        assert_eq!(hidden("Network: WrenCottage_5G\nwren-cottage-42\nRouter's in the hall."), ["wren-cottage-42"]);
        assert_eq!(hidden("WLAN: FRITZ!Box 7590 KQ\nSchlüssel: 4471 9920 3381 5562"), ["4471 9920 3381 5562"]);
        assert!(hidden("Hab das WLAN-Passwort geändert, sag ich dir nachher").is_empty());
        assert!(hidden("Network: down again\nback by 5").is_empty());
        // Postal codes and a shop's code by their words in more languages; a short word of a
        // reference is no prefix ("voo" is not in "voor").
        for text in
            ["Kod pocztowy 00-950", "מיקוד 6100001", "पिन कोड 110001", "Usa il codice SCONTO10 sul tuo prossimo ordine"]
        {
            assert!(hidden(text).is_empty(), "{text}");
        }
        assert_eq!(hidden("Je verificatiecode voor bol is 772019"), ["772019"]);
        assert_eq!(hidden("Je tijdelijke wachtwoord voor Magister is Wk3#pL91."), ["Wk3#pL91"]);
        // A short code's number in a few words is a code only with a word for one, or alone.
        assert!(find("מספר פנייה 88213", true).is_empty());
        assert_eq!(find("88213", true).len(), 1);
    }

    #[test]
    fn compounds_pickup_codes_and_keypads_are_found_and_shops_errors_and_phones_are_not() {
        let hidden = parts;
        assert_eq!(hidden("DHL: Ihre Sendung liegt bereit. Abholcode: 481257. Abholung bis 16.03."), ["481257"]);
        assert_eq!(hidden("Säkerhetskod 739 201 för köp på 1 250 kr hos WEBHALLEN."), ["739 201"]);
        assert_eq!(hidden("Rapun ovikoodi on 7043 ja asunto on B 14"), ["7043"]);
        assert_eq!(hidden("Gate: punch *4521# then drive to unit 7."), ["4521"]);
        assert_eq!(hidden("Salut ! Digicode B4712, bâtiment C"), ["B4712"]);
        assert_eq!(hidden("WiFi:\nBlueDoor_5G\nTaco-Tuesday-88"), ["Taco-Tuesday-88"]);
        for text in [
            "Zahlung abgelehnt, Fehlercode E-4012. Bitte versuchen Sie es später erneut.",
            "Gebruik kortingscode WELKOM10 voor 10% korting.",
            "Alennuskoodi KEVAT20 antaa 20 % alennuksen.",
            "Eurowings: Buchung bestätigt! Buchungscode: QZ7K4M, EW 9042 Köln-Palma",
            "Din adgangskode er blevet ændret. Var det ikke dig? Ring 70 10 00 00.",
            "what's the wifi password again?",
        ] {
            assert!(hidden(text).is_empty(), "{text}: {:?}", hidden(text));
        }
    }

    #[test]
    fn keys_in_groups_years_at_doors_and_entering_in_more_languages_are_found() {
        let hidden = parts;
        // A key of groups after a word for a key, Latin compounds and CJK alike.
        assert_eq!(hidden("the recovery key is 9QHT 2XWM RK7P, keep it"), ["9QHT 2XWM RK7P"]);
        assert_eq!(hidden("Dein Wiederherstellungsschlüssel: R4TZ-9KQM-W2XP-LH7D"), ["R4TZ-9KQM-W2XP-LH7D"]);
        assert_eq!(hidden("你的恢复密钥是 K8QP-2WXM-7TRD，别发给别人"), ["K8QP-2WXM-7TRD"]);
        // A year is a door's code only in a message about a door.
        assert_eq!(hidden("код от домофона 1987, квартира 47"), ["1987"]);
        assert_eq!(hidden("Codul de la poartă e 1989, intri și urci"), ["1989"]);
        assert_eq!(hidden("Marca 2468 en el portero y empuja fuerte"), ["2468"]);
        assert_eq!(hidden("Le digicode c'est 4B172, porte de droite"), ["4B172"]);
        // Entering, in languages that say it before and after.
        assert_eq!(hidden("Zadejte HX72KQ v aplikaci a potvrďte e-mail."), ["HX72KQ"]);
        assert_eq!(hidden("Uygulamaya QT8K2M yazarak e-posta adresinizi onaylayın."), ["QT8K2M"]);
        assert_eq!(hidden("أدخل K7QP2X في التطبيق لتأكيد بريدك الإلكتروني"), ["K7QP2X"]);
        for text in [
            "my keyboard model is AB12-CD34-EF56 (same as yours)",
            "the key words are in chapter 12, see 2019 edition",
            "Advent of Code 2024 starts tonight",
            "La marca 2468 de zapatillas ya está en la tienda",
            "Codul poștal e 010011",
            "ご予約の確認番号は 8821-4471 です。チェックインは15時からです。",
            "Our door was painted in 1987 and the code of conduct is online",
        ] {
            assert!(hidden(text).is_empty(), "{text}: {:?}", hidden(text));
        }
    }

    #[test]
    fn lockboxes_lists_lines_of_their_own_and_codes_to_use_are_found_and_shared_codes_are_not() {
        let hidden = parts;
        // A key box's combination, a digit at a time, in a host's words.
        assert_eq!(hidden("Keys are in the lockbox by the side door, the box is 4-7-1-9. Enjoy!"), ["4-7-1-9"]);
        assert_eq!(hidden("Nøkkelboksen ved døra: 5-7-2-0. God tur!"), ["5-7-2-0"]);
        // A door or a gate given its number.
        assert_eq!(hidden("door is 0614 if I'm not back yet"), ["0614"]);
        assert_eq!(hidden("portão: 1357# e depois a casa é a terceira"), ["1357"]);
        // A list of codes: each of them.
        assert_eq!(
            hidden("New backup codes for your account: 48201937 77110264 30589912 61470083"),
            ["48201937", "77110264", "30589912", "61470083"]
        );
        // A code on a line of its own under a word for code; one to use for signing in.
        assert_eq!(hidden("Código de acesso\nQ2T9KR\nNão o partilhe."), ["Q2T9KR"]);
        assert_eq!(hidden("Use 7KX4QP to finish signing in to Acorn."), ["7KX4QP"]);
        assert_eq!(hidden("Öffne example.de/tv und gib dort XK4-R9P ein."), ["XK4-R9P"]);
        for text in [
            "Use SAVE20 to get 20% off your next order",
            "join my lobby, code is QX7TR. we need one more",
            "Public webinar Thursday. Meeting ID: 845 2210 7731 Passcode: 559023. Share with anyone interested!",
            "SK 1417 till Oslo, gate 34, boarding 16:25.",
            "The zip code for the garage is 94110",
            "Your order\nAB12CD\nships tomorrow",
        ] {
            assert!(hidden(text).is_empty(), "{text}: {:?}", hidden(text));
        }
        // Sharing said in the negative, or by text an attacker can echo, spares nothing.
        assert_eq!(hidden("Your OTP is 482913. Do not share with anyone."), ["482913"]);
        assert_eq!(hidden("Adding payee 'Zoom meeting, open to all'. To confirm use 591806"), ["591806"]);
        assert_eq!(hidden("El código del portal es 4821. Un saludo"), ["4821"]);
        assert_eq!(hidden("Everyone welcome! Wi-Fi password: Blue$ky2291"), ["Blue$ky2291"]);
        // A game's words do not hide a real code that arrives from a short code.
        assert_eq!(hidden("Your Kahoot verification code is 482913"), ["482913"], "a game's own sign-in is a secret");
    }

    #[test]
    fn recovery_codes_door_codes_sign_in_sentences_and_links_in_more_languages_are_found() {
        let hidden = parts;
        // A recovery code of groups after its name, in a language's own words.
        assert_eq!(hidden("Codice di recupero: 4HK2-P9QX-7TMW. Conservalo."), ["4HK2-P9QX-7TMW"]);
        assert_eq!(hidden("Ihr Wiederherstellungscode lautet 8XQ2 M4TR K7PZ"), ["8XQ2 M4TR K7PZ"]);
        // A word that alone names what a door takes opens a clause that names the door.
        assert_eq!(hidden("Digicode de la résidence : 47B29, 2e étage."), ["47B29"]);
        // Given by the colon that ends a sentence about signing in; not one about something else.
        assert_eq!(hidden("Here is what you need to log in on the new laptop: 9XKQ2"), ["9XKQ2"]);
        assert!(hidden("Signed in fine. The room is: B4X2").is_empty());
        // Entering in Swedish and Danish; a Wi-Fi password after "kode".
        assert_eq!(hidden("Ange 482 917 i appen för att koppla klockan."), ["482 917"]);
        assert_eq!(hidden("Wifi: Hytta, kode: Fjell!2025hus"), ["Fjell!2025hus"]);
        // "voor" is not "voo" (a flight): a Dutch pairing code for a box.
        assert_eq!(hidden("Koppelcode voor je tv-box: 9KX-4TQ. Voer deze in op de site."), ["9KX-4TQ"]);
        // Links after words that sign in or confirm an address, in more languages.
        for text in [
            "Войдите по ссылке: https://ya.cc/t/8KqZx2Pm",
            "Bevestig je e-mailadres via https://mrkt.pl/v/Hq82KsZx",
            "להתחברות לחצו: https://wolt.com/l/Bn8TsY3r",
            "Recover your account here: https://tinyurl.com/yh4r8kq2",
        ] {
            assert_eq!(hidden(text).len(), 1, "{text}");
        }
        // The rules' words for confirming an address are not those of confirming an order
        // (the learned model, which reads the link's shape too, takes this one).
        let order = "Bevestiging van je bestelling: https://mrkt.pl/o/Hq82KsZx";
        assert!(find_with(order, false, &learned::Model::empty()).is_empty());
        // "Feel free" offers nothing; a shop's free gift does.
        assert_eq!(hidden("Feel free to call. To sign in use code 4821 when asked"), ["4821"]);
        assert!(hidden("Get a free coffee with code 4821 at checkout").is_empty());
    }

    #[test]
    fn every_rule_is_found_again_by_its_name() {
        for rule in Rule::ALL {
            assert_eq!(Rule::named(rule.as_str()), Some(rule));
        }
        assert_eq!(Rule::named("no_such_rule"), None);
    }

    #[test]
    fn no_text_makes_the_finder_panic() {
        // Texts made of what the rules look at: digits of two widths, separators, words
        // for codes, references and passwords, quotes, CJK, invisible characters and
        // emoji, in every order (a fixed generator: the same texts every run).
        const PARTS: &[&str] = &[
            "4",
            "a",
            "b",
            "82",
            "913",
            "５",
            "-",
            " ",
            ",",
            "、",
            "，",
            "。",
            "！",
            "enter ",
            "入力",
            "door",
            "：",
            ":",
            "\u{AD}",
            "\u{200B}",
            "邮编",
            "编号",
            "码",
            "code",
            "codes",
            "zip",
            " and ",
            "à",
            "password",
            "passwort",
            "密碼",
            "パスワード",
            "「",
            "」",
            "«",
            "»",
            "\"",
            "'",
            "(",
            "（",
            "[",
            "]",
            "ending in ",
            "*",
            "...",
            "〒",
            "enter ",
            "입력",
            "を入力",
            "![",
            "<img",
            "A7K",
            "9KD",
            "é",
            "🙂",
            "\n",
            "https://bit.ly/",
            "reset your password ",
            "booking ",
            "confirmation code ",
            "G-",
            "#",
            "@example.com ",
            "verification code ",
            "Reply STOP to ",
            "İ",
            "\u{212A}",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..20_000 {
            let len = 1 + next(14);
            let text: String = (0..len).map(|_| PARTS[next(PARTS.len())]).collect();
            for short_code in [false, true] {
                let found = find(&text, short_code);
                assert!(found.iter().all(|f| f.rule != Rule::Unread), "the rules failed on {text:?}");
                // What is found lies on the text's character boundaries, in order, apart.
                for pair in found.windows(2) {
                    assert!(pair[0].at.end <= pair[1].at.start, "{text:?}: {found:?}");
                }
                for f in &found {
                    assert!(text.is_char_boundary(f.at.start) && text.is_char_boundary(f.at.end), "{text:?}: {f:?}");
                }
                let _ = hide(&text, &found);
            }
        }
    }

    #[test]
    fn short_code_senders_are_numbers_and_names_businesses_text_from() {
        assert!(is_short_code_sender("72975") && is_short_code_sender("GOOGLE") && is_short_code_sender("Chase"));
        assert!(!is_short_code_sender("+14155550199") && !is_short_code_sender("ada@example.com"));
        assert!(!is_short_code_sender("14155550199"));
        assert!(!is_short_code_sender("unknown") && !is_short_code_sender("me"), "AMC's own names for senders");
        assert_eq!(hide("4471", &find("4471", true)), CODE_MARKER);
    }
}
