pub fn run(_argv: &[String]) -> Result<(), String> { Err("not built yet".into()) }
