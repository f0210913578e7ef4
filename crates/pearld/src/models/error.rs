//! What every refusal of the API carries (any non-2xx answer).

use crate::api_error::ApiError;
use crate::http::Response;
use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody<'a> {
    /// what is wrong and what to do about it
    pub error: &'a str,
    /// the parameter, header or body field at fault
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'a str>,
}

impl<'a> From<&'a ApiError> for ErrorBody<'a> {
    fn from(e: &'a ApiError) -> ErrorBody<'a> {
        ErrorBody { error: &e.message, field: e.field.as_deref() }
    }
}

/// An API refusal as sent: `{"error", "field"}` with its status. Here rather than in `http.rs`,
/// which the request fuzzer compiles without the models.
impl From<&ApiError> for Response {
    fn from(e: &ApiError) -> Response {
        Response::json(e.status, &ErrorBody::from(e))
    }
}
