//! The one table formatter: left-aligned columns two spaces apart, an optional header,
//! no trailing blanks, and control characters flattened so one record stays one line.

use std::fmt;

/// Rows of text cells, printed with every column as wide as its widest cell.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table whose first line names the columns.
    pub fn with_header(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|name| (*name).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// A two-column `field  value` table without a header, for one record.
    pub fn fields<'a>(fields: impl IntoIterator<Item = (&'a str, String)>) -> Table {
        let mut table = Table::default();
        for (name, value) in fields {
            table.row(vec![format!("{name}:"), value]);
        }
        table
    }

    /// Appends a row; text from hookd (errors, reasons) may hold newlines or tabs,
    /// which would break the alignment, so they become spaces.
    pub fn row(&mut self, cells: Vec<String>) {
        let cells = cells
            .into_iter()
            .map(|cell| cell.replace(char::is_control, " "))
            .collect();
        self.rows.push(cells);
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines = (!self.header.is_empty())
            .then_some(&self.header)
            .into_iter()
            .chain(&self.rows);
        let mut widths: Vec<usize> = Vec::new();
        for line in lines.clone() {
            for (column, cell) in line.iter().enumerate() {
                let width = cell.chars().count();
                match widths.get_mut(column) {
                    Some(widest) => *widest = (*widest).max(width),
                    None => widths.push(width),
                }
            }
        }
        for line in lines {
            let mut text = String::new();
            for (cell, width) in line.iter().zip(&widths) {
                text.push_str(&format!("{cell:<width$}  "));
            }
            writeln!(f, "{}", text.trim_end())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_on_the_widest_cell_without_trailing_blanks() {
        let mut table = Table::with_header(&["TENANT_ID", "SCHEME", "DESTINATION"]);
        table.row(vec!["acme".into(), "standard".into(), "(pull)".into()]);
        table.row(vec!["globex-corp".into(), "github".into(), String::new()]);
        assert_eq!(
            table.to_string(),
            "TENANT_ID    SCHEME    DESTINATION\n\
             acme         standard  (pull)\n\
             globex-corp  github\n"
        );
    }

    #[test]
    fn an_empty_table_still_names_its_columns() {
        let table = Table::with_header(&["KID", "STATE"]);
        assert_eq!(table.to_string(), "KID  STATE\n");
    }

    #[test]
    fn widths_count_characters_not_bytes() {
        let mut table = Table::with_header(&["A", "B"]);
        table.row(vec!["héé".into(), "x".into()]);
        table.row(vec!["abcd".into(), "y".into()]);
        assert_eq!(table.to_string(), "A     B\nhéé   x\nabcd  y\n");
    }

    #[test]
    fn control_characters_cannot_split_a_row() {
        let mut table = Table::with_header(&["ID", "ERROR"]);
        table.row(vec!["1".into(), "503\nService\tUnavailable".into()]);
        assert_eq!(
            table.to_string(),
            "ID  ERROR\n1   503 Service Unavailable\n"
        );
    }

    #[test]
    fn field_tables_have_no_header_and_align_values() {
        let table = Table::fields([("kid", "k1".to_owned()), ("secret", "whsec_x".to_owned())]);
        assert_eq!(table.to_string(), "kid:     k1\nsecret:  whsec_x\n");
    }
}
