//! The Windows kernel's printf format engine, for `DbgPrintEx`: walks the
//! variadic arguments as 8-byte slots (the win64 variadic convention).

/// A cursor over variadic 8-byte slots.
#[derive(Debug)]
pub struct Args {
    next: *const u64,
}

impl Args {
    /// A cursor over `slots` (tests and other variadic thunks).
    pub fn new(slots: *const u64) -> Self {
        Self { next: slots }
    }

    /// # Safety
    /// The caller passed another argument.
    unsafe fn take(&mut self) -> u64 {
        // SAFETY: per the contract, a slot exists here.
        let v = unsafe { self.next.read() };
        self.next = self.next.wrapping_add(1);
        v
    }
}

/// Formats like the Windows kernel's printf family: flags `-0#+ `, width
/// and precision (or `*`), sizes `h hh l ll I64 I32 I z w`, conversions
/// `d i u x X o c C s S Z p %` (`%ws`/`%ls`/`%S` wide strings, `%wZ`
/// `UNICODE_STRING*`, `%Z` `ANSI_STRING*`). Output stops at 512 bytes as
/// DbgPrint's does. An unknown conversion is copied verbatim.
///
/// # Safety
/// `args` holds an argument of the right kind for every conversion; string
/// arguments are valid (or null).
#[expect(clippy::too_many_lines, reason = "one printf state machine")]
pub unsafe fn format_windows(fmt: &[u8], args: &mut Args) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < fmt.len() && out.len() < 512 {
        let c = fmt[i];
        i += 1;
        if c != b'%' {
            out.push(char::from(c));
            continue;
        }
        let start = i - 1;
        let (mut left, mut zero, mut alt, mut plus, mut space) =
            (false, false, false, false, false);
        while i < fmt.len() {
            match fmt[i] {
                b'-' => left = true,
                b'0' => zero = true,
                b'#' => alt = true,
                b'+' => plus = true,
                b' ' => space = true,
                _ => break,
            }
            i += 1;
        }
        let mut width = 0usize;
        if fmt.get(i) == Some(&b'*') {
            // SAFETY: a `*` width consumes an int argument (contract).
            width = unsafe { args.take() } as i32 as usize;
            i += 1;
        } else {
            while let Some(d @ b'0'..=b'9') = fmt.get(i) {
                width = width * 10 + usize::from(d - b'0');
                i += 1;
            }
        }
        let mut precision = None;
        if fmt.get(i) == Some(&b'.') {
            i += 1;
            let mut p = 0usize;
            if fmt.get(i) == Some(&b'*') {
                // SAFETY: a `*` precision consumes an int argument.
                p = unsafe { args.take() } as i32 as usize;
                i += 1;
            } else {
                while let Some(d @ b'0'..=b'9') = fmt.get(i) {
                    p = p * 10 + usize::from(d - b'0');
                    i += 1;
                }
            }
            precision = Some(p);
        }
        // Size prefix: bits of the integer argument, wide strings.
        let mut bits = 32;
        let mut wide = false;
        loop {
            match fmt.get(i) {
                Some(b'h') => bits = 16,
                Some(b'l') if fmt.get(i + 1) == Some(&b'l') => {
                    bits = 64;
                    i += 1;
                }
                Some(b'l' | b'w') => wide = true,
                Some(b'I') if fmt.get(i + 1..i + 3) == Some(b"64") => {
                    bits = 64;
                    i += 2;
                }
                Some(b'I') if fmt.get(i + 1..i + 3) == Some(b"32") => {
                    bits = 32;
                    i += 2;
                }
                Some(b'I' | b'z' | b'j' | b't') => bits = 64,
                _ => break,
            }
            i += 1;
        }
        let Some(&conv) = fmt.get(i) else {
            out.push_str(&String::from_utf8_lossy(&fmt[start..]));
            break;
        };
        i += 1;
        let truncate = |v: u64| match bits {
            16 => v & 0xFFFF,
            32 => v & 0xFFFF_FFFF,
            _ => v,
        };
        let body: String = match conv {
            b'%' => "%".into(),
            b'd' | b'i' => {
                // SAFETY: an integer conversion consumes one argument.
                let raw = truncate(unsafe { args.take() });
                let v = match bits {
                    16 => i64::from(raw as u16 as i16),
                    32 => i64::from(raw as u32 as i32),
                    _ => raw as i64,
                };
                let mut s = v.unsigned_abs().to_string();
                if let Some(p) = precision {
                    s = format!("{s:0>p$}");
                }
                let sign = if v < 0 {
                    "-"
                } else if plus {
                    "+"
                } else if space {
                    " "
                } else {
                    ""
                };
                pad_number(sign, &s, width, zero && !left && precision.is_none(), left)
            }
            b'u' | b'x' | b'X' | b'o' => {
                // SAFETY: an integer conversion consumes one argument.
                let v = truncate(unsafe { args.take() });
                let mut s = match conv {
                    b'u' => v.to_string(),
                    b'x' => format!("{v:x}"),
                    b'X' => format!("{v:X}"),
                    _ => format!("{v:o}"),
                };
                if let Some(p) = precision {
                    s = format!("{s:0>p$}");
                }
                let prefix = match conv {
                    b'x' if alt && v != 0 => "0x",
                    b'X' if alt && v != 0 => "0X",
                    b'o' if alt => "0",
                    _ => "",
                };
                pad_number(
                    prefix,
                    &s,
                    width,
                    zero && !left && precision.is_none(),
                    left,
                )
            }
            b'p' => {
                // SAFETY: %p consumes a pointer argument.
                let v = unsafe { args.take() };
                pad_text(&format!("{v:016X}"), width, left)
            }
            b'c' | b'C' => {
                // SAFETY: %c consumes a character argument.
                let v = unsafe { args.take() } as u32;
                let ch = if wide || conv == b'C' {
                    char::from_u32(v & 0xFFFF).unwrap_or('?')
                } else {
                    char::from(v as u8)
                };
                pad_text(&ch.to_string(), width, left)
            }
            b's' | b'S' => {
                // SAFETY: %s consumes a string pointer argument.
                let p = unsafe { args.take() } as usize;
                let wide = wide || conv == b'S';
                // SAFETY: the caller passed a valid string (or null).
                let s = unsafe { read_string(p, wide, precision) };
                pad_text(&s, width, left)
            }
            b'Z' => {
                // SAFETY: %Z/%wZ consume a counted-string pointer.
                let p = unsafe { args.take() } as usize;
                // SAFETY: the caller passed a valid ANSI_STRING or
                // UNICODE_STRING (or null).
                let s = unsafe { read_counted(p, wide) };
                pad_text(&s, width, left)
            }
            _ => String::from_utf8_lossy(&fmt[start..i]).into_owned(),
        };
        out.push_str(&body);
    }
    if out.len() > 512 {
        let mut cut = 512;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    out
}

fn pad_number(prefix: &str, digits: &str, width: usize, zero: bool, left: bool) -> String {
    let len = prefix.len() + digits.len();
    if len >= width {
        format!("{prefix}{digits}")
    } else if left {
        format!("{prefix}{digits}{}", " ".repeat(width - len))
    } else if zero {
        format!("{prefix}{}{digits}", "0".repeat(width - len))
    } else {
        format!("{}{prefix}{digits}", " ".repeat(width - len))
    }
}

fn pad_text(s: &str, width: usize, left: bool) -> String {
    let n = s.chars().count();
    if n >= width {
        s.to_owned()
    } else if left {
        format!("{s}{}", " ".repeat(width - n))
    } else {
        format!("{}{s}", " ".repeat(width - n))
    }
}

/// # Safety
/// `p` is null or a NUL-terminated string (of u16 when `wide`), or has at
/// least `max` characters.
unsafe fn read_string(p: usize, wide: bool, max: Option<usize>) -> String {
    if p == 0 {
        return "(null)".into();
    }
    let max = max.unwrap_or(usize::MAX).min(4096);
    let mut out = Vec::new();
    for k in 0..max {
        let c = if wide {
            // SAFETY: per the contract, the string continues here.
            u32::from(unsafe { (p as *const u16).wrapping_add(k).read_unaligned() })
        } else {
            // SAFETY: per the contract `p` is a NUL-terminated byte string or
            // holds `max` bytes; no NUL was read before `k`, so byte `k` is readable.
            u32::from(unsafe { (p as *const u8).wrapping_add(k).read() })
        };
        if c == 0 {
            break;
        }
        out.push(c);
    }
    if wide {
        let units: Vec<u16> = out.iter().map(|&c| c as u16).collect();
        String::from_utf16_lossy(&units)
    } else {
        let bytes: Vec<u8> = out.iter().map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// # Safety
/// `p` is null or an `ANSI_STRING` (`UNICODE_STRING` when `wide`).
unsafe fn read_counted(p: usize, wide: bool) -> String {
    if p == 0 {
        return "(null)".into();
    }
    // SAFETY: a counted string starts with its byte length (u16).
    let len = usize::from(unsafe { (p as *const u16).read_unaligned() });
    // SAFETY: its Buffer pointer is at offset 8 on x64.
    let buf = unsafe { ((p + 8) as *const usize).read_unaligned() };
    if buf == 0 {
        return "(null)".into();
    }
    if wide {
        // SAFETY: Buffer holds Length bytes of UTF-16.
        let units = unsafe { std::slice::from_raw_parts(buf as *const u16, len / 2) };
        String::from_utf16_lossy(units)
    } else {
        // SAFETY: Buffer holds Length bytes.
        let bytes = unsafe { std::slice::from_raw_parts(buf as *const u8, len) };
        String::from_utf8_lossy(bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(f: &str, slots: &[u64]) -> String {
        let mut args = Args::new(slots.as_ptr());
        // SAFETY: the slots match the format.
        unsafe { format_windows(f.as_bytes(), &mut args) }
    }

    #[test]
    fn windows_specifiers() {
        let s = c"abc";
        assert_eq!(
            fmt("%s|%5s|%-5s|", &[s.as_ptr() as u64; 3]),
            "abc|  abc|abc  |"
        );
        assert_eq!(
            fmt("%d %u %x %X", &[u64::from(-5i32 as u32), 7, 255, 255]),
            "-5 7 ff FF"
        );
        assert_eq!(
            fmt("%08x %#x %lld %llu", &[0xabc, 0x1f, u64::MAX, u64::MAX]),
            "00000abc 0x1f -1 18446744073709551615"
        );
        assert_eq!(
            fmt(
                "%I64x %llx %ld %lu",
                &[0x1_0000_0000, 0x2_0000_0000, 0xFFFF_FFFF, 0xFFFF_FFFF]
            ),
            "100000000 200000000 -1 4294967295"
        );
        assert_eq!(fmt("%p", &[0x1234]), "0000000000001234");
        assert_eq!(
            fmt(
                "%c%c %% %5d|%-3d|",
                &[u64::from(b'o'), u64::from(b'k'), 42, 7]
            ),
            "ok %    42|7  |"
        );
        assert_eq!(fmt("%s", &[0]), "(null)");
    }
}
