"""The API's model: answers as the suite reads them, and what no schema can say."""
