package feishu

import (
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"
)

// flatten renders message content as plain text and collects attachment
// pointers. Unknown or unreadable content never fails: the text then says
// what kind of message it was, or is the raw content.
func flatten(msgType, messageID, content string, mentions []Mention) (string, []Attachment) {
	resolve := mentionResolver(mentions)
	switch msgType {
	case "text":
		var c struct {
			Text string `json:"text"`
		}
		if json.Unmarshal([]byte(content), &c) != nil {
			return content, nil
		}
		return resolve.Replace(c.Text), nil
	case "post":
		return flattenPost(messageID, content, mentions, resolve)
	case "image":
		var c struct {
			ImageKey string `json:"image_key"`
		}
		_ = json.Unmarshal([]byte(content), &c)
		return "[image]", pointer("image", messageID, c.ImageKey, "image", "")
	case "file", "audio", "media":
		var c struct {
			FileKey  string `json:"file_key"`
			FileName string `json:"file_name"`
		}
		_ = json.Unmarshal([]byte(content), &c)
		label := map[string]string{"file": "file", "audio": "audio", "media": "video"}[msgType]
		text := "[" + label + "]"
		if c.FileName != "" {
			text = "[" + label + ": " + c.FileName + "]"
		}
		return text, pointer(msgType, messageID, c.FileKey, "file", c.FileName)
	case "interactive":
		return "[card]", nil
	case "":
		return content, nil
	default:
		return "[" + msgType + "]", nil
	}
}

func pointer(kind, messageID, key, resourceType, name string) []Attachment {
	if key == "" {
		return nil
	}
	return []Attachment{{Kind: kind, MessageID: messageID, FileKey: key, ResourceType: resourceType, Name: name}}
}

// mentionResolver replaces "@_user_N" placeholders with "@Name". Longer keys
// come first so "@_user_10" is not read as "@_user_1" followed by "0".
func mentionResolver(mentions []Mention) *strings.Replacer {
	ms := append([]Mention(nil), mentions...)
	sort.SliceStable(ms, func(i, j int) bool { return len(ms[i].Key) > len(ms[j].Key) })
	var pairs []string
	for _, m := range ms {
		if m.Key == "" {
			continue
		}
		pairs = append(pairs, m.Key, "@"+mentionName(m))
	}
	pairs = append(pairs, "@_all", "@all")
	return strings.NewReplacer(pairs...)
}

func mentionName(m Mention) string {
	if m.Name != "" {
		return m.Name
	}
	return m.OpenID
}

type postElement struct {
	Tag       string `json:"tag"`
	Text      string `json:"text"`
	Href      string `json:"href"`
	UserID    string `json:"user_id"`
	UserName  string `json:"user_name"`
	ImageKey  string `json:"image_key"`
	FileKey   string `json:"file_key"`
	EmojiType string `json:"emoji_type"`
	Language  string `json:"language"`
}

type postBody struct {
	Title   string          `json:"title"`
	Content [][]postElement `json:"content"`
}

// flattenPost reads rich text. Events carry {"title","content"}; the message
// API may wrap it per locale ({"zh_cn": {...}}), in which case the first
// locale in a fixed order is used.
func flattenPost(messageID, content string, mentions []Mention, resolve *strings.Replacer) (string, []Attachment) {
	var body postBody
	if json.Unmarshal([]byte(content), &body) != nil {
		return content, nil
	}
	if body.Title == "" && body.Content == nil {
		var locales map[string]postBody
		if json.Unmarshal([]byte(content), &locales) == nil && len(locales) > 0 {
			body = locales[slices.Min(slices.Collect(maps.Keys(locales)))]
			for _, k := range []string{"zh_cn", "en_us"} {
				if b, ok := locales[k]; ok {
					body = b
					break
				}
			}
		}
	}
	byKey := map[string]Mention{}
	for _, m := range mentions {
		byKey[m.Key] = m
	}
	var lines []string
	if body.Title != "" {
		lines = append(lines, body.Title)
	}
	var atts []Attachment
	for _, para := range body.Content {
		var b strings.Builder
		for _, el := range para {
			switch el.Tag {
			case "text", "md":
				b.WriteString(resolve.Replace(el.Text))
			case "a":
				switch {
				case el.Text == "" || el.Text == el.Href:
					b.WriteString(el.Href)
				case el.Href == "":
					b.WriteString(el.Text)
				default:
					b.WriteString(el.Text + " (" + el.Href + ")")
				}
			case "at":
				switch m, ok := byKey[el.UserID]; {
				case ok:
					b.WriteString("@" + mentionName(m))
				case el.UserID == "all" || el.UserID == "@_all":
					b.WriteString("@all")
				case el.UserName != "":
					b.WriteString("@" + el.UserName)
				default:
					b.WriteString("@" + el.UserID)
				}
			case "img":
				b.WriteString("[image]")
				atts = append(atts, pointer("image", messageID, el.ImageKey, "image", "")...)
			case "media":
				b.WriteString("[video]")
				atts = append(atts, pointer("media", messageID, el.FileKey, "file", "")...)
			case "emotion":
				b.WriteString(":" + el.EmojiType + ":")
			case "code_block":
				b.WriteString("```" + strings.ToLower(el.Language) + "\n" + el.Text + "\n```")
			case "hr":
				b.WriteString("---")
			default:
				b.WriteString(el.Text)
			}
		}
		lines = append(lines, b.String())
	}
	return strings.Join(lines, "\n"), atts
}
