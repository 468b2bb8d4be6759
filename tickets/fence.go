package tickets

// OutsideFence returns the fence token that encloses text where a model
// reads outside text: a line no text can be written to contain, because
// it is derived from the text itself.
func OutsideFence(text string) string { return fenceFor(text) }
