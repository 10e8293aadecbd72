//! RFC 8785 JSON Canonicalization Scheme: object members sorted by their names' UTF-16 code units,
//! strings with only the mandatory escapes (everything else literal UTF-8), numbers as ECMAScript's
//! `Number.prototype.toString` writes them, no whitespace. Nesting is bounded: a card's extension
//! `params` is a `Struct` an attacker can nest at will.

use serde_json::{Number, Value};

/// The deepest object/array nesting accepted (as the a2a-sdk's canonicalizer).
pub const MAX_DEPTH: usize = 128;

/// The canonical form of `value`, or why it has none.
pub fn canonicalize(value: &Value) -> Result<String, String> {
    let mut out = String::new();
    write(value, &mut out, 1)?;
    Ok(out)
}

fn write(value: &Value, out: &mut String, depth: usize) -> Result<(), String> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)?),
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            deeper(depth)?;
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out, depth + 1)?;
            }
            out.push(']');
        }
        Value::Object(members) => {
            deeper(depth)?;
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            sorted.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (name, member)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(name, out);
                out.push(':');
                write(member, out, depth + 1)?;
            }
            out.push('}');
        }
    }
    Ok(())
}

fn deeper(depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("nesting exceeds the maximum depth of {MAX_DEPTH}"));
    }
    Ok(())
}

fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A number as ECMAScript writes it (ECMA-262 7.1.12.1, RFC 8785 §3.2.2.3): integers in full,
/// others from the shortest round-trip digits, in exponent form below 1e-6 and from 1e21.
fn number(n: &Number) -> Result<String, String> {
    let x = n.as_f64().ok_or_else(|| format!("the number {n} has no IEEE 754 double form"))?;
    if !x.is_finite() {
        return Err(format!("the number {n} is not finite"));
    }
    if x == 0.0 {
        return Ok("0".into()); // also -0
    }
    // Shortest round-trip digits and the decimal exponent: d.ddde±k.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').ok_or("unexpected float form")?;
    let exp: i32 = exp.parse().map_err(|_| "unexpected float exponent")?;
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = i32::try_from(digits.len()).map_err(|_| "too many digits")?;
    let n_exp = exp + 1; // the position of the decimal point after the first digit
    let sign = if x < 0.0 { "-" } else { "" };
    let body = if k <= n_exp && n_exp <= 21 {
        format!("{digits}{}", "0".repeat(usize::try_from(n_exp - k).unwrap_or(0)))
    } else if 0 < n_exp && n_exp <= 21 {
        let (int, frac) = digits.split_at(usize::try_from(n_exp).unwrap_or(0));
        format!("{int}.{frac}")
    } else if -6 < n_exp && n_exp <= 0 {
        format!("0.{}{digits}", "0".repeat(usize::try_from(-n_exp).unwrap_or(0)))
    } else {
        let e = n_exp - 1;
        let e = if e >= 0 { format!("+{e}") } else { e.to_string() };
        match digits.split_at(1) {
            (first, "") => format!("{first}e{e}"),
            (first, rest) => format!("{first}.{rest}e{e}"),
        }
    };
    Ok(format!("{sign}{body}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_as_ecmascript_writes_them() {
        // RFC 8785 Appendix B and ECMAScript's Number.prototype.toString.
        for (input, expected) in [
            ("0", "0"),
            ("-0.0", "0"),
            ("1", "1"),
            ("-1", "-1"),
            ("1.5", "1.5"),
            ("100", "100"),
            ("1e21", "1e+21"),
            ("1e20", "100000000000000000000"),
            ("123456789012345680000", "123456789012345680000"),
            ("0.000001", "0.000001"),
            ("1e-7", "1e-7"),
            ("4.50", "4.5"),
            ("2e-3", "0.002"),
            ("0.1", "0.1"),
            ("333333333.3333333", "333333333.3333333"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("5e-324", "5e-324"),
            ("9007199254740991", "9007199254740991"),
            ("-1.5e-10", "-1.5e-10"),
        ] {
            let value: Value = serde_json::from_str(input).unwrap();
            assert_eq!(canonicalize(&value).unwrap(), expected, "{input}");
        }
    }

    #[test]
    fn members_sort_by_utf16_and_strings_keep_utf8() {
        // RFC 8785 §3.2.3's sorting example: by UTF-16 code units, not code points.
        let value = json!({"\u{20ac}": "Euro Sign", "\r": "Carriage Return", "\u{fb33}": "Hebrew Letter Dalet With Dagesh",
            "1": "One", "\u{1f600}": "Emoji: Grinning Face", "\u{80}": "Control", "\u{f6}": "Latin Small Letter O With Diaeresis"});
        let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
            \"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
            \"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
        assert_eq!(canonicalize(&value).unwrap(), expected);
        assert_eq!(canonicalize(&json!({"a": "é\u{1}\"\\\n"})).unwrap(), "{\"a\":\"é\\u0001\\\"\\\\\\n\"}");
        assert_eq!(canonicalize(&json!([1, {"b": [], "a": null}, true])).unwrap(), "[1,{\"a\":null,\"b\":[]},true]");
    }

    #[test]
    fn nesting_is_bounded() {
        let mut deep = json!(1);
        for _ in 0..MAX_DEPTH {
            deep = json!([deep]);
        }
        assert!(canonicalize(&deep).is_ok());
        assert!(canonicalize(&json!({ "x": deep })).unwrap_err().contains("maximum depth"));
    }
}
