//! An API refusal: a status, a message that says what to fix, and the field at fault when there
//! is one. Every non-2xx answer of the API is one of these, sent as `{"error", "field"}`.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    pub field: Option<String>,
}

impl ApiError {
    pub fn new(status: u16, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into(), field: field.map(str::to_string) }
    }

    pub fn bad_request(field: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(400, Some(field), message)
    }

    pub fn not_found(field: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(404, Some(field), message)
    }
}
