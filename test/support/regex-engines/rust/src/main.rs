// Rust's regex, searched (is_match) as jsonschema-rs does. Same protocol as engine.py; names are
// UTF-8, so they hold no lone surrogates.
use std::io::Read;

fn decode(line: &str) -> String {
    line.split_whitespace()
        .map(|c| char::from_u32(u32::from_str_radix(c, 16).unwrap()).unwrap())
        .collect()
}

fn main() {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    let mut lines = input.split('\n');
    let pattern = match regex::Regex::new(&decode(lines.next().unwrap_or(""))) {
        Ok(pattern) => pattern,
        Err(error) => {
            println!("error {}", error.to_string().replace('\n', " "));
            return;
        }
    };
    let names: Vec<&str> = lines.collect();
    for line in &names[..names.len().saturating_sub(1)] {
        println!("{}", if pattern.is_match(&decode(line)) { "1" } else { "0" });
    }
}
