//! Small, exact edits to unpacked source files: each names the text it
//! expects to find exactly once and what goes after it, so a source that
//! changed under it fails loudly instead of being patched somewhere else.

use std::path::Path;

use crate::error::{Error, Result};

/// One edit: insert `insert` right after the single occurrence of `anchor`
/// in `file`.
#[derive(Debug, Clone, Copy)]
pub struct SourceEdit {
    /// The file, relative to the source root.
    pub file: &'static str,
    /// Text that must occur exactly once in the file.
    pub anchor: &'static str,
    /// Text inserted right after the anchor.
    pub insert: &'static str,
    /// Why the edit exists (for error messages and the cache key).
    pub why: &'static str,
}

impl SourceEdit {
    /// `text` with the edit made, or an error if the anchor is missing or
    /// not unique.
    pub fn apply_to(&self, text: &str) -> Result<String> {
        let found = text.matches(self.anchor).count();
        if found != 1 {
            return Err(Error::Image(format!(
                "cannot edit {} ({}): its anchor occurs {found} times, not once:\n{}",
                self.file, self.why, self.anchor
            )));
        }
        let at = text.find(self.anchor).unwrap_or_default() + self.anchor.len();
        let mut edited = String::with_capacity(text.len() + self.insert.len());
        edited.push_str(&text[..at]);
        edited.push_str(self.insert);
        edited.push_str(&text[at..]);
        Ok(edited)
    }

    /// Makes the edit in the file under `root`.
    pub fn apply(&self, root: &Path) -> Result<()> {
        let path = root.join(self.file);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?;
        let edited = self.apply_to(&text)?;
        std::fs::write(&path, edited)
            .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
    }

    /// The edit as text, for cache keys.
    pub fn describe(&self) -> String {
        format!(
            "edit {}\nwhy {}\nanchor {}\ninsert {}\n",
            self.file, self.why, self.anchor, self.insert
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EDIT: SourceEdit = SourceEdit {
        file: "a.c",
        anchor: "void f(int *p)\n{\n",
        insert: "\tif (!p)\n\t\treturn;\n",
        why: "test",
    };

    #[test]
    fn inserts_after_the_anchor() {
        let edited = EDIT
            .apply_to("x\nvoid f(int *p)\n{\n\t*p = 1;\n}\n")
            .unwrap();
        assert_eq!(
            edited,
            "x\nvoid f(int *p)\n{\n\tif (!p)\n\t\treturn;\n\t*p = 1;\n}\n"
        );
    }

    #[test]
    fn a_missing_anchor_is_an_error() {
        let error = EDIT.apply_to("void f(long *p)\n{\n").unwrap_err();
        assert!(error.to_string().contains("0 times"), "{error}");
    }

    #[test]
    fn a_repeated_anchor_is_an_error() {
        let twice = "void f(int *p)\n{\n}\nvoid f(int *p)\n{\n}\n";
        let error = EDIT.apply_to(twice).unwrap_err();
        assert!(error.to_string().contains("2 times"), "{error}");
    }

    #[test]
    fn edits_files_under_a_root() {
        let root = std::env::temp_dir().join(format!("lab-source-edit-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("a.c"), "void f(int *p)\n{\n}\n").unwrap();
        EDIT.apply(&root).unwrap();
        let text = std::fs::read_to_string(root.join("a.c")).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(text, "void f(int *p)\n{\n\tif (!p)\n\t\treturn;\n}\n");
    }
}
