//! Columns sized to their contents: text columns on the left, numbers aligned on the right.

pub struct Table {
    rows: Vec<Vec<String>>,
    /// How many leading columns hold text (left-aligned).
    text_columns: usize,
    /// Whether the last column holds text too.
    text_last: bool,
}

impl Table {
    pub fn new(header: &[&str], text_columns: usize) -> Table {
        Table { rows: vec![header.iter().map(|h| h.to_string()).collect()], text_columns, text_last: false }
    }

    pub fn text_last(mut self) -> Table {
        self.text_last = true;
        self
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let width: Vec<usize> =
            (0..columns).map(|c| self.rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
        let mut out = String::new();
        for r in &self.rows {
            let cells: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(c, s)| {
                    if c < self.text_columns || (self.text_last && c + 1 == columns) {
                        format!("{s:<w$}", w = width[c])
                    } else {
                        format!("{s:>w$}", w = width[c])
                    }
                })
                .collect();
            out += cells.join("  ").trim_end();
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_their_widest_cell() {
        let mut t = Table::new(&["vr", "rx pkts"], 1);
        t.row(vec!["red".into(), "5".into()]);
        t.row(vec!["a".into(), "123456789".into()]);
        assert_eq!(t.render(), "vr     rx pkts\nred          5\na    123456789\n");
    }

    #[test]
    fn a_trailing_text_column_is_left_aligned() {
        let mut t = Table::new(&["vr", "n", "notes"], 1).text_last();
        t.row(vec!["red".into(), "10".into(), "a".into()]);
        assert_eq!(t.render(), "vr    n  notes\nred  10  a\n");
    }
}
