//! Where the file parts an agent sends are written: only into the folder the user chose
//! (`--output-dir`, the working folder by default), under a base name made safe from what the
//! agent named (the part's file name, else its artifact or message id), never over an existing
//! file or through an existing link. The agent picks the bytes, never the place.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Longest base name written, in characters (the extension kept); file systems allow 255 bytes.
const MAX_NAME_CHARS: usize = 100;
/// Names tried (`name`, `1-name`, `2-name`, ...) before giving up.
const MAX_TRIES: usize = 100;
/// File parts saved by one command at most: an answer of tiny parts would otherwise fill the
/// folder with hundreds of thousands of files.
pub const MAX_FILES: usize = 1000;

/// Writes `bytes` into `dir` under a safe name derived from `wanted` (a name the agent chose; else
/// from `fallback`, else `file`); returns the path written. An existing file (or link) of that name
/// is left alone: the next free `N-name` is taken instead.
pub fn save(dir: &Path, wanted: &str, fallback: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let base = safe_name(wanted).or_else(|| safe_name(fallback)).unwrap_or_else(|| "file".into());
    for i in 0..MAX_TRIES {
        let name = if i == 0 { base.clone() } else { format!("{i}-{base}") };
        let path = dir.join(&name);
        // create_new: O_CREAT|O_EXCL, which fails on an existing file and does not follow a link.
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut file) => {
                file.write_all(bytes)?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
    }
    Err(std::io::Error::other(format!("{}: {MAX_TRIES} files of that name already exist", dir.join(base).display())))
}

/// A base name that stays in its folder and is harmless to list: the last path segment of `wanted`
/// (`/` and `\` both separate), only letters, digits and `.-_+,@=()` and spaces kept (anything else,
/// control and bidirectional characters included, becomes `_`), no leading dot (no hidden file
/// such as `.profile`, no `..`), at most [`MAX_NAME_CHARS`] characters, never a Windows device name;
/// `None` when nothing is left.
pub fn safe_name(wanted: &str) -> Option<String> {
    let last = wanted.rsplit(['/', '\\']).next().unwrap_or_default();
    let kept: String =
        last.chars().map(|c| if c.is_alphanumeric() || ".-_+,@=() ".contains(c) { c } else { '_' }).collect();
    let trimmed = kept.trim_start_matches(['.', ' ']).trim_end_matches(['.', ' ']);
    let mut name = shorten(trimmed);
    if name.is_empty() {
        return None;
    }
    let stem = name.split('.').next().unwrap_or_default().trim_end().to_ascii_uppercase();
    let device = matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || (stem.len() == 4
            && (stem.starts_with("COM") || stem.starts_with("LPT"))
            && stem.ends_with(|c: char| c.is_ascii_digit()));
    if device {
        name.insert(0, '_');
    }
    Some(name)
}

/// `name` cut to [`MAX_NAME_CHARS`], its extension (up to 16 characters) kept.
fn shorten(name: &str) -> String {
    if name.chars().count() <= MAX_NAME_CHARS {
        return name.to_string();
    }
    let ext = name.rfind('.').map(|i| &name[i..]).filter(|e| e.chars().count() <= 16).unwrap_or("");
    let stem: String = name[..name.len() - ext.len()].chars().take(MAX_NAME_CHARS - ext.chars().count()).collect();
    format!("{stem}{ext}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_in_their_folder_and_are_plain() {
        for (wanted, safe) in [
            ("report.txt", "report.txt"),
            ("../../../../x-0.bin", "x-0.bin"),
            ("..\\..\\evil.bat", "evil.bat"),
            ("/etc/passwd", "passwd"),
            ("..", ""),
            ("", ""),
            ("dir/", ""),
            ("\x00\x01", "__"),
            (".profile", "profile"),
            ("...hidden. ", "hidden"),
            ("a\x1b]0;t\x07b.txt", "a__0_t_b.txt"),
            ("r\u{e9}sum\u{e9} v2.pdf", "r\u{e9}sum\u{e9} v2.pdf"),
            ("abc\u{202e}txt.exe", "abc_txt.exe"),
            ("NUL.txt", "_NUL.txt"),
            ("com1", "_com1"),
            ("console.txt", "console.txt"),
        ] {
            assert_eq!(safe_name(wanted).unwrap_or_default(), safe, "{wanted:?}");
        }
        let long = format!("{}.tar.gz", "x".repeat(300));
        let short = safe_name(&long).unwrap();
        assert_eq!(short.chars().count(), MAX_NAME_CHARS);
        assert!(short.ends_with("xx.gz"), "{short}");
    }

    #[test]
    fn nothing_is_overwritten() {
        let dir = std::env::temp_dir().join(format!("a2a-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "mine").unwrap();
        let saved = save(&dir, "../a.txt", "unused", b"theirs").unwrap();
        assert_eq!(saved, dir.join("1-a.txt"));
        assert_eq!(std::fs::read_to_string(dir.join("a.txt")).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(&saved).unwrap(), "theirs");
        assert_eq!(save(&dir, "..", "../../m1-0.bin", b"x").unwrap(), dir.join("m1-0.bin"), "the fallback");
        assert_eq!(save(&dir, "", "..", b"x").unwrap(), dir.join("file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
