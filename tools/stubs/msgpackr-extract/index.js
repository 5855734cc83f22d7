// Exports nothing: msgpackr sees no native extractor and uses its JavaScript decoder.
module.exports = null;
