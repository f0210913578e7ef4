//! From a request to a handler, through a table of endpoints. The table is the one source of the
//! API: the router dispatches from it, checks path parameters and bodies against the schemas it
//! declares, and `openapi` publishes it, so the document cannot drift from what is served.
//!
//! Adding an endpoint is one table entry (see `routes.rs`): method, path (`{x}` segments are
//! parameters), summary, parameter and body schemas, documented responses, and a handler that
//! receives the parameters and body already checked.
//!
//! Who may call what is the context's `Guard`: asked who is calling as soon as the endpoint is
//! known (so a client without credentials learns nothing from how its parameters fare), and
//! whether that caller may make this very call once the parameters and body are checked.

use crate::access::{self, Access};
use crate::api_error::ApiError;
use crate::audit;
use crate::http::{percent_decode, Request, Response};
use crate::validate;
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub struct Endpoint<C: 'static> {
    pub method: &'static str,
    pub path: &'static str,
    /// Who may call it: required, so that no endpoint is added open by default.
    pub access: Access,
    pub summary: &'static str,
    pub params: &'static [Param],
    /// The JSON schema of the request body; `None`: the endpoint reads no body.
    pub body: Option<fn() -> Value>,
    /// The outcomes a client should expect besides the generic refusal every endpoint has.
    pub responses: &'static [Reply],
    pub handler: fn(&C, &Call) -> Result<Response, ApiError>,
}

/// A parameter: a `{name}` segment of the path, or an optional `name=value` of the query.
pub struct Param {
    pub name: &'static str,
    pub description: &'static str,
    pub schema: fn() -> Value,
    pub place: Place,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Path,
    Query,
}

pub struct Reply {
    pub status: u16,
    pub description: &'static str,
    pub content: Content,
}

pub enum Content {
    Json(fn() -> Value),
    /// A media type whose body is text (the schema is a string).
    Text(&'static str),
}

/// Who made a request, as the guard established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The admin token, or anyone while none is configured.
    Admin,
    /// A VR's token: that VR and nothing else.
    Owner(String),
    /// No credentials, on an endpoint open to everyone.
    Anyone,
}

impl Caller {
    pub fn sees(&self, vr: &str) -> bool {
        match self {
            Caller::Admin => true,
            Caller::Owner(own) => own == vr,
            Caller::Anyone => false,
        }
    }
}

pub trait Guard: Sized + 'static {
    /// Who sent `r` to `e`; a 401 here is answered with `challenge`.
    fn caller(&self, e: &Endpoint<Self>, r: &Request) -> Result<Caller, ApiError>;
    /// Whether `call.caller()` may make this call (parameters and body already checked).
    fn permit(&self, e: &Endpoint<Self>, call: &Call) -> Result<(), ApiError>;
    /// The `WWW-Authenticate` header of a 401 from `e`.
    fn challenge(&self, e: &Endpoint<Self>) -> String;
}

/// What a handler gets: the path and query parameters and the body, each already checked
/// against the endpoint's schemas, and who is calling.
pub struct Call {
    params: Vec<(&'static str, Value)>,
    body: Value,
    caller: Caller,
    /// What the handler found the call touches beyond what its path names (the VRs a whole
    /// document changes), for the audit line.
    touched: std::cell::RefCell<Vec<String>>,
}

impl Call {
    /// A declared parameter: a path parameter always exists; a query parameter not sent is
    /// `Null`.
    pub fn param(&self, name: &str) -> &Value {
        static ABSENT: Value = Value::Null;
        self.params.iter().find(|(n, _)| *n == name).map_or(&ABSENT, |(_, v)| v)
    }

    /// The body, valid against the endpoint's schema; `Null` for endpoints without one.
    pub fn body(&self) -> &Value {
        &self.body
    }

    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Adds to what the audit says the call touches ("vr blue", "port p3").
    pub fn touch(&self, what: Vec<String>) {
        self.touched.borrow_mut().extend(what);
    }

    /// The VR (`{name}`, or the `name` of a body that makes one) and interface the call names,
    /// then what the handler said it touches.
    fn touches(&self) -> Vec<String> {
        let vr = self.param("name").as_str().or(self.body["name"].as_str()).map(|n| format!("vr {n}"));
        let interface = self.param("interface").as_str().map(|i| format!("interface {i}"));
        vr.into_iter().chain(interface).chain(self.touched.take()).collect()
    }
}

impl std::fmt::Display for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Caller::Admin => write!(f, "admin"),
            Caller::Owner(vr) => write!(f, "VR {vr}'s token"),
            Caller::Anyone => write!(f, "anyone (no credentials)"),
        }
    }
}

/// Answers a request; never panics (a bug that does is answered 500 and logged). A change is
/// audited, whatever its answer.
pub fn handle<C: Guard>(table: &[Endpoint<C>], ctx: &C, r: &Request) -> Response {
    let mut seen = audit::Seen::default();
    let response = answer(table, ctx, r, &mut seen);
    if audit::audited(&r.method) {
        audit::log(&r.method, &r.path, &seen, response.status, &response.body);
    }
    response
}

fn answer<C: Guard>(table: &[Endpoint<C>], ctx: &C, r: &Request, seen: &mut audit::Seen) -> Response {
    match catch_unwind(AssertUnwindSafe(|| dispatch(table, ctx, r, seen))) {
        Ok(response) => response,
        Err(panic) => {
            let why =
                panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned()).unwrap_or_default();
            tracing::error!("internal error serving {} {}: {why}", r.method, r.path);
            let message = format!("internal error serving {} {}; pearld's log has the details", r.method, r.path);
            Response::from(&ApiError::new(500, None, message))
        }
    }
}

fn dispatch<C: Guard>(table: &[Endpoint<C>], ctx: &C, r: &Request, seen: &mut audit::Seen) -> Response {
    let (endpoint, raw) = match find(table, &r.method, &r.path) {
        Ok(found) => found,
        Err(e) => return unmatched(table, ctx, r, seen, &e),
    };
    let caller = match ctx.caller(endpoint, r) {
        Ok(c) => c,
        Err(e) if e.status == 401 => return Response::from(&e).with_header("WWW-Authenticate", ctx.challenge(endpoint)),
        Err(e) if e.status == 429 => return Response::from(&e).with_header("Retry-After", "1"),
        Err(e) => return Response::from(&e),
    };
    seen.who = Some(caller.to_string());
    let call = match prepare(endpoint, r, raw, caller) {
        Ok(call) => call,
        Err(e) => return Response::from(&e),
    };
    let answer = ctx.permit(endpoint, &call).and_then(|()| (endpoint.handler)(ctx, &call));
    seen.touches = call.touches();
    match answer {
        Ok(response) => response,
        Err(e) => Response::from(&e),
    }
}

/// The answer to a request no endpoint serves (`e`, a 404 or 405), given only to a caller the
/// rule `access::UNMATCHED` lets through: what the table lacks is not shown to others either.
fn unmatched<C: Guard>(table: &[Endpoint<C>], ctx: &C, r: &Request, seen: &mut audit::Seen, e: &ApiError) -> Response {
    // Named so that a refusal reads "a request no endpoint serves needs the admin token".
    let stand_in = Endpoint::<C> {
        method: "a request",
        path: "no endpoint serves",
        access: access::UNMATCHED,
        summary: "",
        params: &[],
        body: None,
        responses: &[],
        handler: |_, _| unreachable!("the stand-in for no endpoint is never called"),
    };
    let caller = match ctx.caller(&stand_in, r) {
        Ok(c) => c,
        Err(e) if e.status == 401 => return Response::from(&e).with_header("WWW-Authenticate", ctx.challenge(&stand_in)),
        Err(e) if e.status == 429 => return Response::from(&e).with_header("Retry-After", "1"),
        Err(e) => return Response::from(&e),
    };
    seen.who = Some(caller.to_string());
    let call = Call { params: Vec::new(), body: Value::Null, caller, touched: Default::default() };
    if let Err(refused) = ctx.permit(&stand_in, &call) {
        return Response::from(&refused);
    }
    if e.status == 405 {
        return Response::from(e).with_header("Allow", allowed(table, &r.path).join(", "));
    }
    Response::from(e)
}

/// The endpoint serving `method` on `path`, and its raw path parameters. A literal segment
/// wins over a parameter where both match.
pub fn find<'t, C>(table: &'t [Endpoint<C>], method: &str, path: &str) -> Result<(&'t Endpoint<C>, Captures), ApiError> {
    let segments = segments(path)?;
    let matching: Vec<(&Endpoint<C>, Captures)> = table.iter().filter_map(|e| captures(e.path, &segments).map(|c| (e, c))).collect();
    if matching.is_empty() {
        return Err(ApiError::not_found("path", format!("no resource {path:?}; /openapi.json lists the API")));
    }
    matching.into_iter().filter(|(e, _)| e.method == method).min_by_key(|(_, c)| c.len()).ok_or_else(|| {
        ApiError::new(405, Some("method"), format!("{path} does not support {method}; use {}", allowed(table, path).join(" or ")))
    })
}

fn allowed<C>(table: &[Endpoint<C>], path: &str) -> Vec<&'static str> {
    let segments = segments(path).unwrap_or_default();
    let mut methods: Vec<&'static str> = table.iter().filter(|e| captures(e.path, &segments).is_some()).map(|e| e.method).collect();
    methods.sort_unstable();
    methods.dedup();
    methods
}

fn segments(path: &str) -> Result<Vec<String>, ApiError> {
    path.split('/')
        .skip(1)
        .map(|s| percent_decode(s).ok_or_else(|| ApiError::bad_request("path", format!("{s:?} is not percent-encoded UTF-8"))))
        .collect()
}

/// Path parameters by name, as sent (decoded, not yet checked).
pub type Captures = Vec<(&'static str, String)>;

/// The parameters `pattern` takes from `segments`, or `None` if it does not match.
fn captures(pattern: &'static str, segments: &[String]) -> Option<Captures> {
    let parts: Vec<&'static str> = pattern.split('/').skip(1).collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut found = Vec::new();
    for (part, seg) in parts.into_iter().zip(segments) {
        match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            Some(name) if !seg.is_empty() => found.push((name, seg.clone())),
            Some(_) => return None,
            None if part == seg => {}
            None => return None,
        }
    }
    Some(found)
}

fn prepare<C>(e: &Endpoint<C>, r: &Request, raw: Captures, caller: Caller) -> Result<Call, ApiError> {
    let mut params = Vec::new();
    for (name, text) in raw {
        let p = e.params.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("{}: {{{name}}} is not declared", e.path));
        params.push((p.name, checked(p, text)?));
    }
    // An endpoint without query parameters ignores the query, whatever it holds (a cache
    // buster, say); one with some refuses what it does not take.
    let queried: Vec<&Param> = e.params.iter().filter(|p| p.place == Place::Query).collect();
    if !queried.is_empty() {
        for (name, text) in query_pairs(&r.query)? {
            let Some(p) = queried.iter().find(|p| p.name == name) else {
                let known: Vec<&str> = queried.iter().map(|p| p.name).collect();
                return Err(ApiError::bad_request(&name, format!("{} takes no parameter {name:?}; it takes {}", e.path, known.join(", "))));
            };
            if params.iter().any(|(n, _)| *n == p.name) {
                return Err(ApiError::bad_request(&name, "given more than once"));
            }
            params.push((p.name, checked(p, text)?));
        }
    }
    let body = match e.body {
        None => Value::Null,
        Some(schema) => {
            let media = r.header("content-type").unwrap_or("").split(';').next().unwrap_or("").trim();
            if !media.eq_ignore_ascii_case("application/json") {
                return Err(ApiError::new(415, Some("Content-Type"), "send the body as application/json"));
            }
            let body: Value =
                serde_json::from_slice(&r.body).map_err(|err| ApiError::bad_request("body", format!("not valid JSON: {err}")))?;
            validate::check(&schema(), &body, "")
                .map_err(|i| ApiError::bad_request(if i.field.is_empty() { "body" } else { &i.field }, i.message))?;
            body
        }
    };
    Ok(Call { params, body, caller, touched: Default::default() })
}

/// A parameter's text as its schema's type, checked against the schema.
fn checked(p: &Param, text: String) -> Result<Value, ApiError> {
    let schema = (p.schema)();
    let value = if schema["type"] == "integer" {
        text.parse::<i64>().map(Value::from).map_err(|_| ApiError::bad_request(p.name, format!("{text:?} is not an integer")))?
    } else {
        Value::String(text)
    };
    validate::check(&schema, &value, p.name).map_err(|i| ApiError::bad_request(&i.field, i.message))?;
    Ok(value)
}

/// `a=1&b=x+y` as decoded pairs (`+` is a space, as forms send it).
fn query_pairs(query: &str) -> Result<Vec<(String, String)>, ApiError> {
    let decode = |s: &str| {
        percent_decode(&s.replace('+', " ")).ok_or_else(|| ApiError::bad_request("query", format!("{s:?} is not percent-encoded UTF-8")))
    };
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((decode(name)?, decode(value)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Ctx;

    /// Lets everyone in but the bearer of `Bearer wrong`, and `Bearer red` only to VR red and
    /// not to the admin's endpoints.
    impl Guard for Ctx {
        fn caller(&self, _: &Endpoint<Self>, r: &Request) -> Result<Caller, ApiError> {
            match r.header("authorization") {
                Some("Bearer wrong") => Err(ApiError::new(401, Some("Authorization"), "unknown token")),
                Some("Bearer red") => Ok(Caller::Owner("red".into())),
                _ => Ok(Caller::Admin),
            }
        }

        fn permit(&self, e: &Endpoint<Self>, call: &Call) -> Result<(), ApiError> {
            match (call.caller(), call.params.first()) {
                (Caller::Owner(_), _) if e.access == Access::Admin => Err(ApiError::new(403, Some("Authorization"), "the admin's")),
                (Caller::Owner(own), Some((_, name))) if name != own.as_str() => Err(ApiError::not_found("name", "not yours")),
                _ => Ok(()),
            }
        }

        fn challenge(&self, _: &Endpoint<Self>) -> String {
            "Bearer".into()
        }
    }

    fn ok(_: &Ctx, c: &Call) -> Result<Response, ApiError> {
        Ok(Response::json(200, &json!({"params": c.params.iter().map(|(n, v)| json!([n, v])).collect::<Vec<_>>(), "body": c.body()})))
    }

    fn boom(_: &Ctx, _: &Call) -> Result<Response, ApiError> {
        panic!("handler bug")
    }

    fn name_schema() -> Value {
        json!({"type": "string", "pattern": validate::NAME_PATTERN})
    }

    fn index_schema() -> Value {
        json!({"type": "integer", "minimum": 0, "maximum": 7})
    }

    fn body_schema() -> Value {
        json!({"type": "object", "required": ["weight"], "additionalProperties": false,
               "properties": {"weight": {"type": "integer", "minimum": 1}}})
    }

    const NAME: Param = Param { name: "name", description: "", schema: name_schema, place: Place::Path };
    const INDEX: Param = Param { name: "q", description: "", schema: index_schema, place: Place::Path };

    const LIMIT: Param = Param { name: "limit", description: "", schema: index_schema, place: Place::Query };
    const LIKE: Param = Param { name: "like", description: "", schema: name_schema, place: Place::Query };

    static TABLE: &[Endpoint<Ctx>] = &[
        Endpoint { method: "GET", path: "/", access: Access::Owner, summary: "", params: &[], body: None, responses: &[], handler: ok },
        Endpoint {
            method: "GET",
            path: "/v1/vrs",
            access: Access::Owner,
            summary: "",
            params: &[LIMIT, LIKE],
            body: None,
            responses: &[],
            handler: ok,
        },
        Endpoint {
            method: "GET",
            path: "/v1/vrs/{name}",
            access: Access::Owner,
            summary: "",
            params: &[NAME],
            body: None,
            responses: &[],
            handler: ok,
        },
        Endpoint {
            method: "GET",
            path: "/v1/vrs/summary",
            access: Access::Owner,
            summary: "",
            params: &[],
            body: None,
            responses: &[],
            handler: boom,
        },
        Endpoint {
            method: "PUT",
            path: "/v1/vrs/{name}/queues/{q}",
            access: Access::Owner,
            summary: "",
            params: &[NAME, INDEX],
            body: Some(body_schema),
            responses: &[],
            handler: ok,
        },
    ];

    fn request(method: &str, path: &str, content_type: Option<&str>, body: &str) -> Request {
        Request {
            method: method.into(),
            path: path.split('?').next().unwrap().into(),
            query: path.split_once('?').map_or("", |(_, q)| q).into(),
            headers: content_type.map(|c| ("content-type".to_string(), c.to_string())).into_iter().collect(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn the_guard_decides_before_the_handler_runs() {
        let mut r = request("GET", "/v1/vrs/summary", None, "");
        r.headers.push(("authorization".into(), "Bearer wrong".into()));
        let refused = handle(TABLE, &Ctx, &r);
        assert_eq!(refused.status, 401, "the panicking handler never ran");
        assert_eq!(refused.headers, vec![("WWW-Authenticate", "Bearer".to_string())]);
        let mut r = request("GET", "/v1/vrs/blue", None, "");
        r.headers.push(("authorization".into(), "Bearer red".into()));
        assert_eq!(handle(TABLE, &Ctx, &r).status, 404);
        r.path = "/v1/vrs/red".into();
        assert_eq!(handle(TABLE, &Ctx, &r).status, 200);
    }

    #[test]
    fn a_request_no_endpoint_serves_is_the_admins() {
        for (method, path, status) in [("GET", "/v1/nothing", 404), ("GET", "/v1/vrs/red/nothing", 404), ("DELETE", "/v1/vrs", 405)] {
            let mut r = request(method, path, None, "");
            assert_eq!(handle(TABLE, &Ctx, &r).status, status, "{method} {path} as the admin");
            r.headers.push(("authorization".into(), "Bearer red".into()));
            assert_eq!(handle(TABLE, &Ctx, &r).status, 403, "{method} {path} as VR red's owner");
            r.headers[0].1 = "Bearer wrong".into();
            assert_eq!(handle(TABLE, &Ctx, &r).status, 401, "{method} {path} with an unknown token");
        }
    }

    fn answer(method: &str, path: &str, content_type: Option<&str>, body: &str) -> (u16, Value, Response) {
        let r = handle(TABLE, &Ctx, &request(method, path, content_type, body));
        let v = serde_json::from_slice(&r.body).unwrap();
        (r.status, v, r)
    }

    #[test]
    fn parameters_and_bodies_reach_the_handler_checked_and_typed() {
        let (status, v, _) = answer("PUT", "/v1/vrs/r%2Dd/queues/3", Some("application/json; charset=utf-8"), r#"{"weight": 2}"#);
        assert_eq!(status, 200);
        assert_eq!(v, json!({"params": [["name", "r-d"], ["q", 3]], "body": {"weight": 2}}));
        assert_eq!(answer("GET", "/", None, "").0, 200);
    }

    #[test]
    fn query_parameters_are_typed_and_optional_and_ignored_where_none_are_declared() {
        assert_eq!(answer("GET", "/v1/vrs?like=r%2Dd&limit=3", None, "").1["params"], json!([["like", "r-d"], ["limit", 3]]));
        assert_eq!(answer("GET", "/v1/vrs?&limit=7&", None, "").1["params"], json!([["limit", 7]]));
        assert_eq!(answer("GET", "/v1/vrs", None, "").1["params"], json!([]));
        assert_eq!(answer("GET", "/?anything=at%zzall", None, "").0, 200);
    }

    #[test]
    fn a_literal_segment_wins_over_a_parameter() {
        let (e, c) = find(TABLE, "GET", "/v1/vrs/summary").unwrap();
        assert_eq!((e.path, c.len()), ("/v1/vrs/summary", 0));
        assert_eq!(find(TABLE, "GET", "/v1/vrs/red").unwrap().0.path, "/v1/vrs/{name}");
    }

    #[test]
    fn refusals_name_the_field() {
        // (method, path, token, body, status, the field the refusal names)
        type Case<'a> = (&'a str, &'a str, Option<&'a str>, &'a str, u16, &'a str);
        let cases: &[Case] = &[
            ("GET", "/nowhere", None, "", 404, "path"),
            ("GET", "/v1/vrs/", None, "", 404, "path"),
            ("GET", "/v1/vrs/%zz", None, "", 400, "path"),
            ("DELETE", "/v1/vrs/red", None, "", 405, "method"),
            ("GET", "/v1/vrs/not%20a%20name", None, "", 400, "name"),
            ("PUT", "/v1/vrs/red/queues/x", Some("application/json"), "{}", 400, "q"),
            ("PUT", "/v1/vrs/red/queues/8", Some("application/json"), "{}", 400, "q"),
            ("PUT", "/v1/vrs/red/queues/1", None, "{}", 415, "Content-Type"),
            ("PUT", "/v1/vrs/red/queues/1", Some("application/json"), "{", 400, "body"),
            ("PUT", "/v1/vrs/red/queues/1", Some("application/json"), "", 400, "body"),
            ("PUT", "/v1/vrs/red/queues/1", Some("application/json"), "[]", 400, "body"),
            ("PUT", "/v1/vrs/red/queues/1", Some("application/json"), "{}", 400, "weight"),
            ("PUT", "/v1/vrs/red/queues/1", Some("application/json"), r#"{"weight": 0}"#, 400, "weight"),
            ("PUT", "/v1/vrs/red/queues/1", Some("application/json"), r#"{"weight": 1, "x": 0}"#, 400, "x"),
            ("GET", "/v1/vrs?limit=x", None, "", 400, "limit"),
            ("GET", "/v1/vrs?limit=9", None, "", 400, "limit"),
            ("GET", "/v1/vrs?limit=1&limit=2", None, "", 400, "limit"),
            ("GET", "/v1/vrs?like=a+b", None, "", 400, "like"),
            ("GET", "/v1/vrs?limt=1", None, "", 400, "limt"),
            ("GET", "/v1/vrs?like=%zz", None, "", 400, "query"),
        ];
        for (method, path, ct, body, status, field) in cases {
            let (got, v, _) = answer(method, path, *ct, body);
            assert_eq!((got, v["field"].as_str().unwrap_or("")), (*status, *field), "{method} {path} {body}: {v}");
            assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()));
        }
    }

    #[test]
    fn a_wrong_method_is_answered_with_the_allowed_ones() {
        let (_, _, r) = answer("POST", "/v1/vrs/red", None, "");
        assert_eq!(r.headers, vec![("Allow", "GET".to_string())]);
    }

    #[test]
    fn a_panicking_handler_is_answered_500_and_the_server_goes_on() {
        let (status, v, _) = answer("GET", "/v1/vrs/summary", None, "");
        assert_eq!(status, 500);
        assert!(v["error"].as_str().unwrap().contains("/v1/vrs/summary"));
        assert_eq!(answer("GET", "/", None, "").0, 200);
    }
}
