//! Server text on a terminal. Whatever an agent sends (names, ids, status and artifact text, error
//! messages, file names) goes through [`neutralize`] before it is printed for people: control
//! characters would otherwise reach the terminal as commands (set the window title, write the
//! clipboard with OSC 52, clear the screen, move the cursor back to forge a "COMPLETED" line).
//! `--json` output is not touched: JSON escaping keeps the exact text, and scripts want it.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether the text is printed as lines of its own (newlines and tabs kept) or within one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// Multi-line text (a message, an artifact): `\n` and `\t` are kept.
    Keep,
    /// A name, an id, a URL, an error: every control character is escaped.
    Escape,
}

/// `text` with every character a terminal would act on shown visibly escaped: C0 controls
/// (`\x1b`; `\n` and `\t` kept with [`Lines::Keep`]), DEL (`\x7f`), C1 controls (`\u{9b}`, which some
/// terminals read as ESC [) and the bidirectional overrides (`\u{202e}`, which reorder what is
/// shown). Everything else is unchanged, so ordinary text costs nothing.
pub fn neutralize(text: &str, lines: Lines) -> Cow<'_, str> {
    let acted_on = |c: char| match c {
        '\n' | '\t' => lines == Lines::Escape,
        _ => c.is_control() || is_bidi_control(c),
    };
    if !text.chars().any(acted_on) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !acted_on(c) {
            shown.push(c);
        } else if c.is_ascii() {
            let _ = write!(shown, "\\x{:02x}", u32::from(c));
        } else {
            let _ = write!(shown, "\\u{{{:x}}}", u32::from(c));
        }
    }
    Cow::Owned(shown)
}

/// One line of server text (see [`neutralize`]).
pub fn line(text: &str) -> Cow<'_, str> {
    neutralize(text, Lines::Escape)
}

/// Multi-line server text (see [`neutralize`]).
pub fn text(text: &str) -> Cow<'_, str> {
    neutralize(text, Lines::Keep)
}

/// The Unicode bidirectional formatting characters ("Trojan Source", CVE-2021-42574).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_are_shown_not_obeyed() {
        let title = "\x1b]0;pwned\x07name";
        assert_eq!(line(title), "\\x1b]0;pwned\\x07name");
        let clipboard = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x1b\\";
        assert_eq!(line(clipboard), "\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x1b\\");
        assert_eq!(line("a\rCOMPLETED\x7f"), "a\\x0dCOMPLETED\\x7f");
        assert_eq!(line("\u{9b}2J clear"), "\\u{9b}2J clear", "C1 CSI");
        assert_eq!(line("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(line("two\nlines\tx"), "two\\x0alines\\x09x");
        assert_eq!(text("two\nlines\tx\x1b[2J"), "two\nlines\tx\\x1b[2J");
    }

    #[test]
    fn ordinary_text_is_borrowed_unchanged() {
        for s in ["hello", "héllo wörld ✓ 日本", "C:\\path\\x1b is literal text", ""] {
            assert!(matches!(line(s), Cow::Borrowed(b) if b == s), "{s}");
        }
    }
}
