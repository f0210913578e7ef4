//! A YAML node together with its path in the document, so every parse error names its field.

use crate::error::ConfigError;
use yaml_rust2::Yaml;

#[derive(Clone, Copy)]
pub struct Node<'a> {
    pub yaml: &'a Yaml,
    path: &'a str,
}

/// Owns the path strings of child nodes for as long as the parse of a section runs.
pub struct Child {
    path: String,
}

impl Child {
    pub fn node<'a>(&'a self, yaml: &'a Yaml) -> Node<'a> {
        Node { yaml, path: &self.path }
    }
}

impl<'a> Node<'a> {
    pub fn root(yaml: &'a Yaml) -> Node<'a> {
        Node { yaml, path: "" }
    }

    pub fn path(&self) -> &str {
        self.path
    }

    pub fn err(&self, message: impl Into<String>) -> ConfigError {
        ConfigError::at(self.path, message)
    }

    pub fn child_path(&self, key: &str) -> Child {
        let path = if self.path.is_empty() { key.to_string() } else { format!("{}.{key}", self.path) };
        Child { path }
    }

    pub fn index_path(&self, i: usize) -> Child {
        Child { path: format!("{}[{i}]", self.path) }
    }

    /// Refuses keys other than `allowed`: a misspelt option must not be silently ignored.
    pub fn only_keys(&self, allowed: &[&str]) -> Result<(), ConfigError> {
        let Yaml::Hash(h) = self.yaml else { return Err(self.err("expected a mapping")) };
        for k in h.keys() {
            let name = k.as_str().ok_or_else(|| self.err("keys must be strings"))?;
            if !allowed.contains(&name) {
                let p = self.child_path(name);
                return Err(ConfigError::at(p.path, format!("unknown field (expected one of: {})", allowed.join(", "))));
            }
        }
        Ok(())
    }

    pub fn get(&self, key: &str) -> Option<&'a Yaml> {
        match self.yaml {
            Yaml::Hash(h) => h.get(&Yaml::String(key.to_string())).filter(|v| !v.is_null()),
            _ => None,
        }
    }

    pub fn str(&self) -> Result<&'a str, ConfigError> {
        self.yaml.as_str().ok_or_else(|| self.err("expected a string"))
    }

    pub fn int(&self) -> Result<i64, ConfigError> {
        self.yaml.as_i64().ok_or_else(|| self.err("expected an integer"))
    }

    pub fn bool(&self) -> Result<bool, ConfigError> {
        self.yaml.as_bool().ok_or_else(|| self.err("expected true or false"))
    }

    pub fn uint(&self, max: u64) -> Result<u64, ConfigError> {
        let v = self.int()?;
        if v < 0 || v as u64 > max {
            return Err(self.err(format!("{v} is out of range 0..={max}")));
        }
        Ok(v as u64)
    }

    pub fn list(&self) -> Result<&'a [Yaml], ConfigError> {
        match self.yaml {
            Yaml::Array(a) => Ok(a),
            _ => Err(self.err("expected a list")),
        }
    }
}

/// Runs `f` on the child `key` of `node` if present.
pub fn optional<'a, T>(node: &Node<'a>, key: &str, f: impl FnOnce(Node<'_>) -> Result<T, ConfigError>) -> Result<Option<T>, ConfigError> {
    match node.get(key) {
        None => Ok(None),
        Some(y) => {
            let child = node.child_path(key);
            f(child.node(y)).map(Some)
        }
    }
}

/// Runs `f` on the child `key` of `node`, which must be present.
pub fn required<'a, T>(node: &Node<'a>, key: &str, f: impl FnOnce(Node<'_>) -> Result<T, ConfigError>) -> Result<T, ConfigError> {
    optional(node, key, f)?.ok_or_else(|| ConfigError::at(node.child_path(key).path, "is required"))
}

/// Runs `f` on every element of the list `key` of `node` (absent = empty).
pub fn each<'a, T>(node: &Node<'a>, key: &str, mut f: impl FnMut(Node<'_>) -> Result<T, ConfigError>) -> Result<Vec<T>, ConfigError> {
    let Some(y) = node.get(key) else { return Ok(Vec::new()) };
    let child = node.child_path(key);
    let list = child.node(y).list()?;
    let list_node = child.node(y);
    list.iter()
        .enumerate()
        .map(|(i, item)| {
            let c = list_node.index_path(i);
            f(c.node(item))
        })
        .collect()
}
