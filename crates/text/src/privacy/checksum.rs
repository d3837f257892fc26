//! Check digits and structure rules that tell a real card or id number from any other run of
//! digits. A random number passes Luhn one time in ten and MOD 11-2 one time in eleven, so each
//! check is paired with what the number must look like besides (issuer prefix, region, birth
//! date, reserved ranges).

/// Luhn (mod 10) over ASCII digits; false when `digits` holds anything else or is empty.
pub(crate) fn luhn(digits: &str) -> bool {
    let mut sum = 0u32;
    for (i, b) in digits.bytes().rev().enumerate() {
        if !b.is_ascii_digit() {
            return false;
        }
        let mut d = u32::from(b - b'0');
        if i % 2 == 1 {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
    }
    !digits.is_empty() && sum.is_multiple_of(10)
}

/// Whether ASCII `digits` could be a payment card number: 13–19 digits, an issuer prefix in use
/// (Amex, Diners, JCB 3…; Visa 4…; Mastercard 51–55 and 2221–2720; Discover, UnionPay,
/// Maestro 5…/6…), not one digit repeated, and a valid Luhn check digit. Numbers starting with 0,
/// 1, 7, 8 or 9 (phone numbers, timestamps, order numbers) are never cards.
pub(crate) fn is_card_number(digits: &str) -> bool {
    let len = digits.len();
    if !(13..=19).contains(&len) || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let prefix_ok = match digits.as_bytes().first() {
        Some(b'3' | b'4' | b'5' | b'6') => true,
        Some(b'2') => digits
            .get(..4)
            .and_then(|p| p.parse::<u32>().ok())
            .is_some_and(|p| (2221..=2720).contains(&p)),
        _ => false,
    };
    let first = digits.as_bytes().first();
    let repeated = digits.bytes().all(|b| Some(&b) == first);
    prefix_ok && !repeated && luhn(digits)
}

/// Province-level codes that open a Chinese resident id (GB/T 2260 first two digits, plus
/// Taiwan 71, Hong Kong 81, Macao 82 and the 83 used for residence permits).
const CN_REGIONS: &[u32] = &[
    11, 12, 13, 14, 15, 21, 22, 23, 31, 32, 33, 34, 35, 36, 37, 41, 42, 43, 44, 45, 46, 50, 51, 52,
    53, 54, 61, 62, 63, 64, 65, 71, 81, 82, 83,
];

/// Whether `id` is a valid 18-character Chinese resident id: 17 digits and a check character
/// (digit or X) per ISO 7064 MOD 11-2, a known region code and a real birth date (1900–2099).
pub(crate) fn is_cn_resident_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    if bytes.len() != 18 || !bytes.iter().take(17).all(u8::is_ascii_digit) {
        return false;
    }
    const WEIGHTS: [u32; 17] = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
    const CHECKS: &[u8; 11] = b"10X98765432";
    let sum: u32 = bytes
        .iter()
        .zip(WEIGHTS)
        .map(|(b, w)| u32::from(b - b'0') * w)
        .sum();
    let expected = CHECKS.get((sum % 11) as usize).copied();
    let check = bytes.get(17).map(u8::to_ascii_uppercase);
    if expected != check {
        return false;
    }
    let number = |range: std::ops::Range<usize>| id.get(range).and_then(|s| s.parse::<u32>().ok());
    let region_ok = number(0..2).is_some_and(|r| CN_REGIONS.contains(&r));
    match (number(6..10), number(10..12), number(12..14)) {
        (Some(y), Some(m), Some(d)) => {
            region_ok && (1900..=2099).contains(&y) && valid_date(y, m, d)
        }
        _ => false,
    }
}

/// Whether year-month-day names a day of the Gregorian calendar.
fn valid_date(year: u32, month: u32, day: u32) -> bool {
    let leap = (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// Whether area, group and serial form an SSN the US could have issued: area not 000, 666 or
/// 900–999, group not 00, serial not 0000.
pub(crate) fn is_ssn(area: u32, group: u32, serial: u32) -> bool {
    area != 0 && area != 666 && area < 900 && group != 0 && serial != 0
}

/// Whether `nino` (letters and digits only, no spaces) is a well-formed UK National Insurance
/// number: two prefix letters (first not D F I Q U V, second not D F I O Q U V; never BG GB KN NK
/// NT TN ZZ), six digits, and a suffix letter A–D.
pub(crate) fn is_uk_nino(nino: &str) -> bool {
    let upper = nino.to_ascii_uppercase();
    let b = upper.as_bytes();
    if b.len() != 9 {
        return false;
    }
    let (Some(&first), Some(&second), Some(&suffix)) = (b.first(), b.get(1), b.get(8)) else {
        return false;
    };
    let letters_ok = first.is_ascii_uppercase()
        && second.is_ascii_uppercase()
        && !b"DFIQUV".contains(&first)
        && !b"DFIOQUV".contains(&second);
    let prefix = upper.get(..2).unwrap_or("");
    let reserved = ["BG", "GB", "KN", "NK", "NT", "TN", "ZZ"].contains(&prefix);
    let digits_ok = b.iter().skip(2).take(6).all(u8::is_ascii_digit);
    letters_ok && !reserved && digits_ok && (b'A'..=b'D').contains(&suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_known_values() {
        for good in [
            "79927398713",
            "4111111111111111",
            "378282246310005",
            "0",
            "18",
        ] {
            assert!(luhn(good), "{good}");
        }
        for bad in ["79927398710", "4111111111111112", "", "12a4", "1"] {
            assert!(!luhn(bad), "{bad}");
        }
    }

    #[test]
    fn card_numbers_need_prefix_length_and_check_digit() {
        for good in [
            "4111111111111111", // Visa
            "4012888888881881", // Visa
            "4222222222222",    // Visa, 13 digits
            "5555555555554444", // Mastercard
            "2223003122003222", // Mastercard 2-series
            "378282246310005",  // Amex
            "6011111111111117", // Discover
            "3530111333300000", // JCB
            "30569309025904",   // Diners
            "6212345678901265", // UnionPay (Luhn-valid)
            "6250941006528599", // UnionPay test card
        ] {
            assert!(is_card_number(good), "{good}");
        }
        for bad in [
            "4111111111111112",     // check digit
            "1234567812345670",     // passes Luhn, but no issuer starts with 1
            "2023050812304503",     // a timestamp, not a 2-series prefix
            "79927398713",          // too short
            "41111111111111111111", // too long
            "4444444444444444",     // one digit repeated
            "8888888888888888",
        ] {
            assert!(!is_card_number(bad), "{bad}");
        }
    }

    #[test]
    fn chinese_resident_id_checksum_region_and_date() {
        for good in [
            "11010519491231002X",
            "11010519491231002x",
            "440308199901011234",
            "110101200002290018",
        ] {
            assert!(is_cn_resident_id(good), "{good}");
        }
        for bad in [
            "110105194912310021", // wrong check character
            "11010519491231002",  // 17 characters
            "990105194912310023", // no such region, though the check character fits
            "110105194913130020", // month 13, though the check character fits
            "110101190102290019", // 1901-02-29 is not a day, though the check character fits
            "1101051949123100XX",
        ] {
            assert!(!is_cn_resident_id(bad), "{bad}");
        }
    }

    #[test]
    fn ssn_reserved_ranges() {
        assert!(is_ssn(123, 45, 6789));
        assert!(is_ssn(536, 22, 1234));
        assert!(!is_ssn(0, 45, 6789));
        assert!(!is_ssn(666, 45, 6789));
        assert!(!is_ssn(912, 45, 6789));
        assert!(!is_ssn(123, 0, 6789));
        assert!(!is_ssn(123, 45, 0));
    }

    #[test]
    fn nino_letters() {
        for good in ["AB123456C", "ab123456c", "JG103759A", "CE123456D"] {
            assert!(is_uk_nino(good), "{good}");
        }
        for bad in [
            "AB123456E",
            "DA123456A",
            "AO123456A",
            "GB123456A",
            "ZZ123456A",
            "AB12345C",
            "A1123456C",
        ] {
            assert!(!is_uk_nino(bad), "{bad}");
        }
    }
}
