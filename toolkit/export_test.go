package toolkit

// GeminiSchema lets the tests check the Gemini rewriting of one schema.
var GeminiSchema = geminiSchema
