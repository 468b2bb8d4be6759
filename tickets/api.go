package tickets

// KindAPIRequest is the card of a Ticket asked for through POST
// /api/tickets: its Thread (github:owner/name@api:<n>) is its own, with no
// conversation on GitHub, so what the Executor says under it stays on the
// Ticket's page.
const KindAPIRequest = "api_request"
