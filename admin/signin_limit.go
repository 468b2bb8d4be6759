package admin

import "github.com/superagent-dev/superagent/internal/httpserver"

// signInLimit slows down guessing the admin token at sign-in: after
// signInMaxFailures wrong tokens from one address, that address gets one
// more try a minute (httpserver.AttemptLimit's defaults, the same as /api).
// Only wrong tokens are counted or refused: the right token signs in from
// any address, however many wrong ones came from it, so guessing cannot
// lock the owner out. The token is long and random when generated, but a
// deployment may set a weaker one.
type signInLimit = httpserver.AttemptLimit

const signInMaxFailures = httpserver.DefaultAttemptBurst
