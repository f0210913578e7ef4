//! `bpf_printk` (`bpf_trace_printk`, helper 6): a program's debugging lines. The kernel puts them
//! in its trace pipe; here they gather in the `Vm`'s `Trace`, which the host empties after a
//! batch into its log. Formats as the kernel's: at most three arguments; conversions `d i u x X
//! c p s` with `l`/`ll`/`h` length modifiers, the flags `-` and `0`, and a width; `%%`.

use std::fmt::Write;

/// The most text a `Trace` holds between two takes; lines beyond it are counted, not kept.
const TRACE_BYTES: usize = 4096;
/// The longest `%s` string read from the program's memory.
const STRING_MAX: usize = 64;

/// The lines the program printed since the host last took them.
#[derive(Default)]
pub struct Trace {
    text: String,
    dropped: u64,
    /// One conversion's text, before its padding (kept: printing allocates only while warming up).
    one: String,
}

impl Trace {
    /// Hands each line printed since the last take to `line`, and forgets them; the number of
    /// lines that did not fit.
    pub fn take(&mut self, mut line: impl FnMut(&str)) -> u64 {
        self.text.lines().for_each(&mut line);
        self.text.clear();
        std::mem::take(&mut self.dropped)
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.dropped == 0
    }
}

/// Prints `fmt` (up to its NUL) with `args` into `trace` as one line; the line's length, or
/// `None` for a format the kernel would refuse. `string_at(addr, out)` copies the NUL-ended
/// string at `addr` of the program's memory into `out`; its length, or `None` if unreadable.
pub(crate) fn printk(
    trace: &mut Trace,
    fmt: &[u8],
    args: &[u64],
    mut string_at: impl FnMut(u64, &mut [u8]) -> Option<usize>,
) -> Option<usize> {
    let fmt = fmt.split(|&b| b == 0).next().unwrap_or_default();
    let start = trace.text.len();
    let (mut i, mut used) = (0, 0);
    let mut next_arg = || {
        used += 1;
        args.get(used - 1).copied()
    };
    let refuse = |trace: &mut Trace| {
        trace.text.truncate(start);
        None
    };
    while i < fmt.len() {
        let b = fmt[i];
        i += 1;
        if b != b'%' {
            trace.text.push(if b.is_ascii() && b != b'\n' { b as char } else { ' ' });
            continue;
        }
        if fmt.get(i) == Some(&b'%') {
            trace.text.push('%');
            i += 1;
            continue;
        }
        let (mut left, mut zero, mut width) = (false, false, 0usize);
        while let Some(&f) = fmt.get(i).filter(|f| matches!(f, b'-' | b'0')) {
            left |= f == b'-';
            zero |= f == b'0';
            i += 1;
        }
        while let Some(d) = fmt.get(i).filter(|d| d.is_ascii_digit()) {
            width = (width * 10 + usize::from(d - b'0')).min(64);
            i += 1;
        }
        let mut bits = 32;
        while let Some(&m) = fmt.get(i).filter(|m| matches!(m, b'l' | b'h')) {
            bits = if m == b'l' { 64 } else { 16 };
            i += 1;
        }
        let Some(&conversion) = fmt.get(i) else { return refuse(trace) };
        i += 1;
        let Some(arg) = next_arg() else { return refuse(trace) };
        let masked = if bits == 64 { arg } else { arg & ((1u64 << bits) - 1) };
        let signed = match bits {
            16 => i64::from(masked as u16 as i16),
            32 => i64::from(masked as u32 as i32),
            _ => arg as i64,
        };
        let one = &mut trace.one;
        one.clear();
        let _ = match conversion {
            b'd' | b'i' => write!(one, "{signed}"),
            b'u' => write!(one, "{masked}"),
            b'x' => write!(one, "{masked:x}"),
            b'X' => write!(one, "{masked:X}"),
            b'p' => write!(one, "0x{arg:x}"),
            b'c' => write!(one, "{}", char::from(arg as u8)),
            b's' => {
                let mut buf = [0u8; STRING_MAX];
                let Some(n) = string_at(arg, &mut buf) else { return refuse(trace) };
                write!(one, "{}", String::from_utf8_lossy(&buf[..n]))
            }
            _ => return refuse(trace),
        };
        let pad = width.saturating_sub(one.len());
        let fill = if zero && !left && matches!(conversion, b'd' | b'i' | b'u' | b'x' | b'X') { '0' } else { ' ' };
        let mut one = one.as_str();
        if !left {
            if fill == '0' && one.starts_with('-') {
                trace.text.push('-');
                one = &one[1..];
            }
            trace.text.extend(std::iter::repeat_n(fill, pad));
        }
        trace.text.push_str(one);
        if left {
            trace.text.extend(std::iter::repeat_n(' ', pad));
        }
    }
    let len = trace.text.len() - start;
    if trace.text.len() + 1 > TRACE_BYTES {
        trace.text.truncate(start);
        trace.dropped += 1;
    } else {
        trace.text.push('\n');
    }
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(fmt: &str, args: [u64; 3]) -> Option<String> {
        let mut t = Trace::default();
        let n = printk(&mut t, format!("{fmt}\0").as_bytes(), &args, |_, out| {
            out[..5].copy_from_slice(b"hello");
            Some(5)
        })?;
        let mut lines = Vec::new();
        t.take(|l| lines.push(l.to_string()));
        assert_eq!((lines.len(), lines[0].len()), (1, n));
        Some(lines.remove(0))
    }

    #[test]
    fn formats_as_the_kernels_trace_printk() {
        assert_eq!(line("frames %u, last %d", [7, (-3i32) as u32 as u64, 0]).unwrap(), "frames 7, last -3");
        assert_eq!(line("%llx %lld %x", [u64::MAX, u64::MAX, u64::MAX]).unwrap(), "ffffffffffffffff -1 ffffffff");
        assert_eq!(line("[%5d|%-4u|%05d] %%", [42, 7, (-42i32) as u32 as u64]).unwrap(), "[   42|7   |-0042] %");
        assert_eq!(line("%s: %c%p", [0x4000_0000, u64::from(b'!'), 0x10]).unwrap(), "hello: !0x10");
        assert_eq!(line("%hd", [0xffff, 0, 0]).unwrap(), "-1");
    }

    #[test]
    fn formats_the_kernel_refuses_print_nothing() {
        assert_eq!(line("%d %d %d %d", [1, 2, 3]), None, "a fourth argument");
        assert_eq!(line("%q", [1, 0, 0]), None, "an unknown conversion");
        assert_eq!(line("ends in %", [1, 0, 0]), None);
        let mut t = Trace::default();
        assert_eq!(printk(&mut t, b"%s\0", &[0, 0, 0], |_, _| None), None, "an unreadable string");
        assert!(t.is_empty());
    }

    #[test]
    fn a_full_trace_counts_the_lines_it_cannot_keep() {
        let mut t = Trace::default();
        for _ in 0..TRACE_BYTES / 10 + 5 {
            printk(&mut t, b"123456789\0", &[0; 3], |_, _| None);
        }
        let mut kept = 0;
        assert_eq!(t.take(|_| kept += 1), 5);
        assert_eq!(kept, TRACE_BYTES / 10, "lines of 9 characters and their ends");
        assert!(t.is_empty(), "taken");
    }
}
