// Package setup gets a team's credentials in place before the service runs.
//
// GitHub: GitHub registers an App from a manifest (the "manifest flow"). A
// GitHub value serves a one-button page on the loopback interface; the button
// posts the manifest (permissions, events, webhook URL) to GitHub, where the
// person confirms. GitHub then redirects the browser back to the page's
// callback with a one-time code, which is exchanged for the App's id, private
// key and webhook secret. Those are written to the data directory (mode
// 0600), where LoadGitHubAppFile and WithGitHubAppFile let the service find
// them when the SUPERAGENT_GITHUB_* variables are unset.
//
// Feishu: CheckFeishu proves a Feishu/Lark app id and secret work by minting a
// tenant access token and reading the bot's identity, and explains what to
// change when they do not.
package setup
