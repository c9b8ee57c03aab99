B
conv1.biasJ@ì·¹©`<½+\º˜¡f;øG»L>§¹