package promptparts

// Status says how a part's text relates to the built-in default.
type Status string

// The statuses of a part, as the API reports them.
const (
	// StatusDefault: no override; the part follows the built-in text.
	StatusDefault Status = "default"
	// StatusOverridden: the team's text, based on the current default.
	StatusOverridden Status = "overridden"
	// StatusDefaultUpdated: the team's text was based on a default that a
	// newer release changed; the team should keep, take the new default or
	// edit.
	StatusDefaultUpdated Status = "default_updated"
)

// DecideStatus applies the dpkg conffile rule. hasOverride says whether the
// team overrides the part; overrideSHA is the SHA-256 of the override's text,
// baseSHA the default it was based on, defaultSHA the current default's.
//
// An override whose text equals the current default is no override at all
// (the next save removes it), so it reads as default. Otherwise an override
// based on the current default is overridden, and one based on anything
// else, including no recorded base, is default_updated.
func DecideStatus(hasOverride bool, overrideSHA, baseSHA, defaultSHA string) Status {
	switch {
	case !hasOverride:
		return StatusDefault
	case overrideSHA == defaultSHA:
		return StatusDefault
	case baseSHA == defaultSHA:
		return StatusOverridden
	default:
		return StatusDefaultUpdated
	}
}
